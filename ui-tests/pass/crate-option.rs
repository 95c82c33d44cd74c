//! `crate = path` names the `collectives` crate for the expansion: here it is reached only through
//! a re-export.

mod deps {
    pub use collectives as inner;
}

fn main() {
    let g = collectives::device_group!(Cpu(0), Cpu(1), crate = crate::deps::inner);
    assert_eq!(g.map(|g| g.size()).ok(), Some(2));
}
