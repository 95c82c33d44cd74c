// Two Vulkan devices cannot read each other's memory: a direct copy between them does not compile.
fn main() -> collectives::Result<()> {
    let group = collectives::device_group!(Vulkan, Vulkan(1))?;
    let (a, b) = group.members();
    let x = a.tensor(vec![1.0f32; 4], [4])?;
    let _y = x.copy_direct(b)?;
    Ok(())
}
