// A typed group takes at most 12 members: the 13th is refused, once, on its own token.
fn main() {
    let _group = collectives::device_group!(
        Cpu(0), Cpu(1), Cpu(2), Cpu(3), Cpu(4), Cpu(5), Cpu(6), Cpu(7), Cpu(8), Cpu(9), Cpu(10), Cpu(11), Cpu(12)
    );
}
