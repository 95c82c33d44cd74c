// An unknown kind with no near miss is left for inference in the stub: still one error.
fn main() -> collectives::Result<()> {
    let group = collectives::device_group!(Metal, Cpu)?;
    println!("{} members, led by {:?}", group.size(), group.leader());
    Ok(())
}
