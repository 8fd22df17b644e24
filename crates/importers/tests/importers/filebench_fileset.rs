//! Filebench filesets: the directory tree holding every entry, picks, preallocation, and PATH_MAX.

use rand::SeedableRng;
use trimlab_importers::filebench::fileset::Fileset;
use trimlab_importers::filebench::value::Amount;
use trimlab_importers::filebench::FilesetDef;
use trimlab_sim::SimRng;

fn def(entries: u64, width: u64) -> FilesetDef {
    FilesetDef {
        name: "set".into(),
        line: 1,
        entries,
        dirwidth: Amount::Fixed(width),
        dirgamma: 1.5,
        size: Amount::Fixed(4096),
        prealloc_percent: 80,
        readonly: false,
        single_file: false,
    }
}

#[test]
fn tree_holds_every_entry_under_its_directories() {
    let mut rng = SimRng::seed_from_u64(3);
    let s = Fileset::populate(&def(1000, 20), &mut rng).unwrap();
    assert_eq!(s.entries.len(), 1000);
    assert_eq!(s.dirs[0], "set");
    for e in &s.entries {
        let dir = &e.path[..e.path.rfind('/').unwrap()];
        assert!(s.dirs.iter().any(|d| d == dir), "{} has no directory", e.path);
    }
    // Mean width 20 over 1000 files: a tree of a few levels and tens of directories.
    assert!((10..400).contains(&s.dirs.len()), "{} dirs", s.dirs.len());
    // varmail's width of 10^6: one directory under the root holds every file.
    let wide = Fileset::populate(&def(1000, 1_000_000), &mut rng).unwrap();
    assert_eq!(wide.dirs, vec!["set".to_string(), "set/00000001".to_string()]);
}

#[test]
fn picks_rotate_and_prealloc_takes_its_share() {
    let mut rng = SimRng::seed_from_u64(5);
    let mut s = Fileset::populate(&def(10, 5), &mut rng).unwrap();
    assert_eq!(s.pick(true), None, "nothing exists yet");
    for i in [2, 5, 7] {
        s.set_exists(i, true);
    }
    let picks: Vec<_> = (0..4).map(|_| s.pick(true).unwrap()).collect();
    assert_eq!(picks, vec![2, 5, 7, 2]);
    assert_eq!(s.pick(false), Some(0));
    assert_eq!(s.pick(false), Some(1));
    assert_eq!(s.pick(false), Some(3), "existing entries are not picked for creation");
    let order = s.prealloc_order(80, &mut rng);
    let mut sorted = order.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), order.len(), "each entry once");
    let big = Fileset::populate(&def(5000, 20), &mut rng).unwrap().prealloc_order(80, &mut rng);
    assert!((3800..4200).contains(&big.len()), "{}", big.len());
    assert!(big.windows(2).any(|w| w[0] > w[1]), "a random order, not index order");
}

#[test]
fn a_chain_as_deep_as_the_entries_is_refused_at_path_max() {
    let mut rng = SimRng::seed_from_u64(7);
    let e = Fileset::populate(&def(1_000_000, 1), &mut rng).unwrap_err();
    assert!(e.contains("past the kernel's PATH_MAX of 4096 bytes"), "{e}");
}
