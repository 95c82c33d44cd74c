// A CUDA -> Vulkan copy is not one hop; only the staged `copy_to` is offered.
fn main() -> collectives::Result<()> {
    let group = collectives::device_group!(Cuda, Vulkan)?;
    let (cuda, vulkan) = group.members();
    let x = cuda.tensor(vec![1.0f32; 4], [4])?;
    let _y = x.copy_direct(vulkan)?;
    Ok(())
}
