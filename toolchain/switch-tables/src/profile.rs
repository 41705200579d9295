use std::collections::{BTreeMap, BTreeSet};

use crate::ProfileError;

/// One member of a group with its weight (P4Runtime `ActionProfileGroup.Member`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroupMember {
    pub member: u32,
    pub weight: u32,
}

struct Member<V> {
    value: V,
    /// bmv2 member handle: the lowest free one when the member was created. bmv2 keeps a
    /// group's members as a set of these handles, so selection order follows them.
    handle: u32,
    groups: BTreeSet<u32>,
}

struct Group {
    members: Vec<GroupMember>,
    /// (slots up to and including this member, member id) in selection order: a member of
    /// weight w owns w consecutive slots without storing them, whatever the weights.
    slots: Vec<(u64, u32)>,
}

/// An action profile (v1model `action_profile`) or selector (`action_selector`): members
/// hold action data `V`, groups hold weighted lists of members.
///
/// Selection (`select`) follows bmv2: a group's members are ordered by their bmv2 member
/// handle (bmv2 gives each new member the lowest free handle, so this is creation order
/// unless members were deleted) and the member at `hash % n` wins. A member of weight `w`
/// takes `w` consecutive slots of the `n`, which is how a weighted member behaves when
/// replicated into `w` bmv2 members created one after another.
pub struct ActionProfile<V> {
    max_members: usize,
    max_groups: usize,
    max_group_size: usize,
    members: BTreeMap<u32, Member<V>>,
    free_handles: BTreeSet<u32>,
    next_handle: u32,
    groups: BTreeMap<u32, Group>,
}

impl<V> ActionProfile<V> {
    /// `max_members` and `max_groups` bound each kind of object (P4Info `size`);
    /// `max_group_size` bounds a group's total weight, 0 meaning only the profile size
    /// `max_members` bounds it (P4Info `max_group_size`).
    pub fn new(max_members: usize, max_groups: usize, max_group_size: usize) -> Self {
        ActionProfile {
            max_members,
            max_groups,
            max_group_size,
            members: BTreeMap::new(),
            free_handles: BTreeSet::new(),
            next_handle: 0,
            groups: BTreeMap::new(),
        }
    }

    pub fn insert_member(&mut self, id: u32, value: V) -> Result<(), ProfileError> {
        if self.members.contains_key(&id) {
            return Err(ProfileError::DuplicateMember(id));
        }
        if self.members.len() >= self.max_members {
            return Err(ProfileError::MembersFull {
                max: self.max_members,
            });
        }
        let handle = self.free_handles.pop_first().unwrap_or_else(|| {
            self.next_handle += 1;
            self.next_handle - 1
        });
        self.members.insert(
            id,
            Member {
                value,
                handle,
                groups: BTreeSet::new(),
            },
        );
        Ok(())
    }

    /// Adds a member under the lowest free id and returns it, as bmv2's runtime CLI
    /// `act_prof_create_member` hands out member handles.
    pub fn add_member(&mut self, value: V) -> Result<u32, ProfileError> {
        let id = (0..=u32::MAX)
            .find(|i| !self.members.contains_key(i))
            .ok_or(ProfileError::MembersFull {
                max: self.max_members,
            })?;
        self.insert_member(id, value)?;
        Ok(id)
    }

    pub fn modify_member(&mut self, id: u32, value: V) -> Result<(), ProfileError> {
        let m = self
            .members
            .get_mut(&id)
            .ok_or(ProfileError::UnknownMember(id))?;
        m.value = value;
        Ok(())
    }

    /// Deletes a member that no group holds.
    pub fn delete_member(&mut self, id: u32) -> Result<V, ProfileError> {
        let m = self
            .members
            .get(&id)
            .ok_or(ProfileError::UnknownMember(id))?;
        if let Some(&group) = m.groups.first() {
            return Err(ProfileError::MemberInUse { member: id, group });
        }
        let m = self.members.remove(&id).expect("checked above");
        self.free_handles.insert(m.handle);
        Ok(m.value)
    }

    pub fn member(&self, id: u32) -> Option<&V> {
        self.members.get(&id).map(|m| &m.value)
    }

    /// Members in id order.
    pub fn members(&self) -> impl Iterator<Item = (u32, &V)> + '_ {
        self.members.iter().map(|(&id, m)| (id, &m.value))
    }

    pub fn member_count(&self) -> usize {
        self.members.len()
    }

    pub fn insert_group(&mut self, id: u32, members: Vec<GroupMember>) -> Result<(), ProfileError> {
        if self.groups.contains_key(&id) {
            return Err(ProfileError::DuplicateGroup(id));
        }
        if self.groups.len() >= self.max_groups {
            return Err(ProfileError::GroupsFull {
                max: self.max_groups,
            });
        }
        let slots = self.check_group(id, &members)?;
        self.attach(id, &members);
        self.groups.insert(id, Group { members, slots });
        Ok(())
    }

    /// Replaces a group's member list (P4Runtime MODIFY of an `ActionProfileGroup`).
    pub fn modify_group(&mut self, id: u32, members: Vec<GroupMember>) -> Result<(), ProfileError> {
        if !self.groups.contains_key(&id) {
            return Err(ProfileError::UnknownGroup(id));
        }
        let slots = self.check_group(id, &members)?;
        let old = self.groups.remove(&id).expect("checked above");
        self.detach(id, &old.members);
        self.attach(id, &members);
        self.groups.insert(id, Group { members, slots });
        Ok(())
    }

    /// Deletes a group (its members stay) and returns its member list.
    pub fn delete_group(&mut self, id: u32) -> Result<Vec<GroupMember>, ProfileError> {
        let g = self
            .groups
            .remove(&id)
            .ok_or(ProfileError::UnknownGroup(id))?;
        self.detach(id, &g.members);
        Ok(g.members)
    }

    /// A group's members as given on insert or modify.
    pub fn group(&self, id: u32) -> Option<&[GroupMember]> {
        self.groups.get(&id).map(|g| g.members.as_slice())
    }

    /// Groups in id order.
    pub fn groups(&self) -> impl Iterator<Item = (u32, &[GroupMember])> + '_ {
        self.groups
            .iter()
            .map(|(&id, g)| (id, g.members.as_slice()))
    }

    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// The member a packet with this selector hash gets from the group: `slots[hash % n]`
    /// (see the type's documentation for the slot order). `None` for an unknown or empty
    /// group; bmv2 treats an empty group as a miss.
    pub fn select(&self, group: u32, hash: u64) -> Option<u32> {
        let slots = &self.groups.get(&group)?.slots;
        let &(total, _) = slots.last()?;
        let slot = hash % total;
        let at = slots.partition_point(|&(end, _)| end <= slot);
        slots.get(at).map(|&(_, member)| member)
    }

    /// Empties the profile, as a pipeline reload does.
    pub fn clear(&mut self) {
        self.members.clear();
        self.groups.clear();
        self.free_handles.clear();
        self.next_handle = 0;
    }

    /// Validates a member list and builds its selection slots.
    fn check_group(
        &self,
        id: u32,
        members: &[GroupMember],
    ) -> Result<Vec<(u64, u32)>, ProfileError> {
        let mut seen = BTreeSet::new();
        let mut total: u64 = 0;
        let mut ordered = Vec::with_capacity(members.len());
        for gm in members {
            let m = self
                .members
                .get(&gm.member)
                .ok_or(ProfileError::UnknownMember(gm.member))?;
            if !seen.insert(gm.member) {
                return Err(ProfileError::MemberListedTwice {
                    group: id,
                    member: gm.member,
                });
            }
            if gm.weight == 0 {
                return Err(ProfileError::ZeroWeight {
                    group: id,
                    member: gm.member,
                });
            }
            total += u64::from(gm.weight);
            ordered.push((m.handle, gm.member, gm.weight));
        }
        let max = match self.max_group_size {
            0 => self.max_members,
            n => n,
        };
        if total > max as u64 {
            return Err(ProfileError::GroupTooLarge {
                group: id,
                size: total,
                max,
            });
        }
        ordered.sort_unstable();
        let mut end = 0;
        Ok(ordered
            .into_iter()
            .map(|(_, member, weight)| {
                end += u64::from(weight);
                (end, member)
            })
            .collect())
    }

    fn attach(&mut self, group: u32, members: &[GroupMember]) {
        for gm in members {
            if let Some(m) = self.members.get_mut(&gm.member) {
                m.groups.insert(group);
            }
        }
    }

    fn detach(&mut self, group: u32, members: &[GroupMember]) {
        for gm in members {
            if let Some(m) = self.members.get_mut(&gm.member) {
                m.groups.remove(&group);
            }
        }
    }
}
