use switch_tables::{ActionProfile, GroupMember, ProfileError};

fn gm(member: u32, weight: u32) -> GroupMember {
    GroupMember { member, weight }
}

#[test]
fn select_indexes_members_in_creation_order_with_hash_modulo_size() {
    let mut p = ActionProfile::new(16, 4, 8);
    // Created in the order 30, 10, 20: bmv2 handles 0, 1, 2.
    for id in [30, 10, 20] {
        p.insert_member(id, id * 100).unwrap();
    }
    p.insert_group(1, vec![gm(10, 1), gm(20, 1), gm(30, 1)])
        .unwrap();
    let picks: Vec<u32> = (0..6).map(|h| p.select(1, h).unwrap()).collect();
    assert_eq!(picks, vec![30, 10, 20, 30, 10, 20]);
    assert_eq!(
        p.select(1, u64::MAX),
        Some([30, 10, 20][(u64::MAX % 3) as usize])
    );
    assert_eq!(p.member(20), Some(&2000));
}

#[test]
fn weights_are_consecutive_repeated_slots() {
    let mut p = ActionProfile::new(16, 4, 8);
    for id in [1, 2, 3] {
        p.insert_member(id, ()).unwrap();
    }
    p.insert_group(7, vec![gm(2, 3), gm(1, 1), gm(3, 2)])
        .unwrap();
    let picks: Vec<u32> = (0..6).map(|h| p.select(7, h).unwrap()).collect();
    assert_eq!(picks, vec![1, 2, 2, 2, 3, 3]);
    assert_eq!(p.group(7), Some(&[gm(2, 3), gm(1, 1), gm(3, 2)][..]));
}

#[test]
fn deleted_member_handles_are_reused_lowest_first() {
    let mut p = ActionProfile::new(16, 4, 0);
    for id in [1, 2, 3] {
        p.insert_member(id, ()).unwrap();
    }
    p.delete_member(1).unwrap();
    // Member 9 takes bmv2 handle 0, so it sorts before 2 and 3.
    p.insert_member(9, ()).unwrap();
    p.insert_group(1, vec![gm(2, 1), gm(3, 1), gm(9, 1)])
        .unwrap();
    assert_eq!(p.select(1, 0), Some(9));
    assert_eq!(p.select(1, 1), Some(2));
}

#[test]
fn add_member_picks_the_lowest_free_id() {
    let mut p = ActionProfile::new(4, 1, 0);
    assert_eq!(p.add_member('a'), Ok(0));
    assert_eq!(p.add_member('b'), Ok(1));
    p.delete_member(0).unwrap();
    assert_eq!(p.add_member('c'), Ok(0));
    assert_eq!(p.member(0), Some(&'c'));
}

#[test]
fn modify_group_replaces_members_and_releases_old_ones() {
    let mut p = ActionProfile::new(8, 2, 0);
    for id in 0..4 {
        p.insert_member(id, id).unwrap();
    }
    p.insert_group(5, vec![gm(0, 1), gm(1, 1)]).unwrap();
    assert_eq!(
        p.delete_member(0),
        Err(ProfileError::MemberInUse {
            member: 0,
            group: 5
        })
    );
    p.modify_group(5, vec![gm(2, 1), gm(3, 1)]).unwrap();
    assert_eq!(p.delete_member(0), Ok(0));
    assert_eq!(p.select(5, 1), Some(3));
    assert_eq!(p.delete_group(5), Ok(vec![gm(2, 1), gm(3, 1)]));
    assert_eq!(p.delete_member(2), Ok(2));
    assert_eq!(p.group_count(), 0);
}

#[test]
fn empty_and_unknown_groups_select_nothing() {
    let mut p = ActionProfile::<()>::new(8, 2, 0);
    p.insert_group(1, vec![]).unwrap();
    assert_eq!(p.select(1, 5), None);
    assert_eq!(p.select(2, 5), None);
}

#[test]
fn every_profile_error() {
    use ProfileError::*;
    let mut p = ActionProfile::new(2, 1, 3);
    p.insert_member(1, ()).unwrap();
    assert_eq!(p.insert_member(1, ()), Err(DuplicateMember(1)));
    p.insert_member(2, ()).unwrap();
    assert_eq!(p.insert_member(3, ()), Err(MembersFull { max: 2 }));
    assert_eq!(p.modify_member(3, ()), Err(UnknownMember(3)));
    assert_eq!(p.delete_member(3), Err(UnknownMember(3)));
    assert_eq!(p.insert_group(1, vec![gm(3, 1)]), Err(UnknownMember(3)));
    assert_eq!(
        p.insert_group(1, vec![gm(1, 1), gm(1, 1)]),
        Err(MemberListedTwice {
            group: 1,
            member: 1
        })
    );
    assert_eq!(
        p.insert_group(1, vec![gm(1, 0)]),
        Err(ZeroWeight {
            group: 1,
            member: 1
        })
    );
    assert_eq!(
        p.insert_group(1, vec![gm(1, 2), gm(2, 2)]),
        Err(GroupTooLarge {
            group: 1,
            size: 4,
            max: 3
        })
    );
    p.insert_group(1, vec![gm(1, 2), gm(2, 1)]).unwrap();
    assert_eq!(p.insert_group(1, vec![]), Err(DuplicateGroup(1)));
    assert_eq!(p.insert_group(2, vec![]), Err(GroupsFull { max: 1 }));
    assert_eq!(p.modify_group(2, vec![]), Err(UnknownGroup(2)));
    assert_eq!(p.delete_group(2), Err(UnknownGroup(2)));
    assert_eq!(
        p.delete_member(2),
        Err(MemberInUse {
            member: 2,
            group: 1
        })
    );
    // A failed modify leaves the group as it was.
    assert_eq!(p.modify_group(1, vec![gm(9, 1)]), Err(UnknownMember(9)));
    assert_eq!(p.group(1), Some(&[gm(1, 2), gm(2, 1)][..]));
    // Large weights cost no memory: slots are not materialized.
    let mut big = ActionProfile::new(4, 1, usize::MAX);
    big.insert_member(0, ()).unwrap();
    big.insert_member(1, ()).unwrap();
    big.insert_group(0, vec![gm(0, u32::MAX), gm(1, 1)])
        .unwrap();
    assert_eq!(big.select(0, u64::from(u32::MAX) - 1), Some(0));
    assert_eq!(big.select(0, u64::from(u32::MAX)), Some(1));
    assert_eq!(big.select(0, u64::from(u32::MAX) + 1), Some(0));
    // max_group_size 0: the profile size bounds the total weight.
    let mut q = ActionProfile::new(2, 1, 0);
    q.insert_member(0, ()).unwrap();
    assert_eq!(
        q.insert_group(0, vec![gm(0, u32::MAX)]),
        Err(GroupTooLarge {
            group: 0,
            size: u64::from(u32::MAX),
            max: 2
        })
    );
}

#[test]
fn tables_and_profiles_can_be_shared_between_pipeline_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<switch_tables::Table<Vec<u8>>>();
    shared::<ActionProfile<Vec<u8>>>();
}
