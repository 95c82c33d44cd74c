// A kind is written by name alone: `collectives::typed::Cuda` is one error, on the path.
fn main() -> collectives::Result<()> {
    let group = collectives::device_group!(collectives::typed::Cuda, Cpu)?;
    println!("{} members", group.size());
    Ok(())
}
