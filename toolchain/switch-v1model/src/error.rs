//! Why a control-plane operation failed: closed codes (bmv2's `MatchErrorCode` and the
//! equivalents for other objects), and the conversions from `switch-tables`' errors.

use switch_tables::{ProfileError, TableError};

/// Why a control-plane operation failed; one variant per bmv2 `MatchErrorCode` (and the
/// equivalents for other objects), so a gRPC layer maps them one to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    InvalidTableName,
    InvalidActionName,
    /// The action is not one of the table's actions.
    ActionNotInTable,
    TableFull,
    DuplicateEntry,
    BadMatchKey,
    InvalidHandle,
    BadActionData,
    WrongTableType,
    DefaultActionIsConst,
    DefaultEntryIsConst,
    ImmutableTableEntries,
    InvalidActionProfileName,
    InvalidMemberHandle,
    MemberStillUsed,
    InvalidGroupHandle,
    ActionProfileFull,
    InvalidCounterName,
    InvalidMeterName,
    InvalidRegisterName,
    InvalidValueSetName,
    InvalidCalculationName,
    IndexOutOfRange,
    BadValue,
    InvalidMirroringSession,
    InvalidMulticastGroup,
    InvalidMulticastNode,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
}

pub fn fail<T>(code: ErrorCode, message: impl Into<String>) -> Result<T, ApiError> {
    Err(ApiError {
        code,
        message: message.into(),
    })
}

impl From<TableError> for ApiError {
    fn from(e: TableError) -> ApiError {
        let code = match e {
            TableError::Full { .. } => ErrorCode::TableFull,
            TableError::Duplicate { .. } => ErrorCode::DuplicateEntry,
            TableError::InvalidHandle(_) => ErrorCode::InvalidHandle,
            _ => ErrorCode::BadMatchKey,
        };
        ApiError {
            code,
            message: e.to_string(),
        }
    }
}

impl From<ProfileError> for ApiError {
    fn from(e: ProfileError) -> ApiError {
        let code = match e {
            ProfileError::UnknownMember(_) | ProfileError::MemberListedTwice { .. } => {
                ErrorCode::InvalidMemberHandle
            }
            ProfileError::MemberInUse { .. } => ErrorCode::MemberStillUsed,
            ProfileError::UnknownGroup(_) | ProfileError::DuplicateGroup(_) => {
                ErrorCode::InvalidGroupHandle
            }
            ProfileError::DuplicateMember(_) => ErrorCode::InvalidMemberHandle,
            ProfileError::MembersFull { .. } | ProfileError::GroupsFull { .. } => {
                ErrorCode::ActionProfileFull
            }
            ProfileError::ZeroWeight { .. } | ProfileError::GroupTooLarge { .. } => {
                ErrorCode::BadValue
            }
        };
        ApiError {
            code,
            message: e.to_string(),
        }
    }
}
