// A group needs at least one member.
fn main() {
    let _group = collectives::device_group!();
}
