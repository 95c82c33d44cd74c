//! `collectives::device_group!` needs no other import.

fn main() {
    let g = collectives::device_group!(Cpu(0), Cpu(1));
    assert_eq!(g.map(|g| g.size()).ok(), Some(2));
}
