//! Routes are associated types; direct copies compile exactly where the route is direct.

use std::marker::PhantomData;

use collectives::typed::{Cpu, Cuda, Direct, Group, Route, Staged, Vulkan};
use collectives::Device;

fn same<T>(_: PhantomData<T>, _: PhantomData<T>) {}

fn path<A: Route<B>, B: collectives::typed::DeviceKind>() -> PhantomData<A::Path> {
    PhantomData
}

fn main() -> collectives::Result<()> {
    same(path::<Cuda, Vulkan>(), PhantomData::<Staged<Cpu>>);
    same(path::<Vulkan, Cuda>(), PhantomData::<Staged>);
    same(path::<Cuda, Cuda>(), PhantomData::<Direct>);
    same(path::<Cuda, Cpu>(), PhantomData::<Direct>);
    same(path::<Cpu, Vulkan>(), PhantomData::<Direct>);
    same(path::<Vulkan, Vulkan>(), PhantomData::<Staged>);

    // Graphs for GPUs build without them; only realizing needs the devices.
    let devices = [Device::Cuda(0), Device::Cuda(1), Device::Vulkan(0), Device::Cpu(0)];
    let g: Group<(Cuda, Cuda, Vulkan, Cpu)> = Group::from_devices(&devices, Device::Cuda(0))?;
    let (c0, c1, vk, cpu) = g.members();
    let x = c0.tensor(vec![1.0f32; 8], [8])?;
    let _peer = x.copy_direct(c1)?;
    let _host = x.copy_direct(cpu)?;
    let _up = _host.copy_direct(vk)?;
    let staged = x.copy_to(vk)?;
    assert_eq!(staged.tensor().inputs()[0].device(), Device::Cpu(0));

    // Two Vulkan devices cannot read each other's memory: their hop is staged too.
    let pair: Group<(Vulkan, Vulkan)> = Group::from_devices(&[Device::Vulkan(0), Device::Vulkan(1)], Device::Vulkan(0))?;
    let (v0, v1) = pair.members();
    let y = v0.tensor(vec![1.0f32; 8], [8])?.copy_to(v1)?;
    assert_eq!(y.tensor().inputs()[0].device(), Device::Cpu(0));
    Ok(())
}
