// A group has one leader.
fn main() {
    let _group = collectives::device_group!(Cuda, Cpu, leader = Cpu, leader = Cuda);
}
