// Device ordinals count from 0.
fn main() {
    let _group = collectives::device_group!(Cuda(-1), Cpu);
}
