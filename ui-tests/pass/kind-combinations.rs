//! Every sequence of 1 to 4 member kinds (120 groups) makes a group of the right type;
//! a repeated kind is written with the next ordinal (a bare kind is ordinal 0). Opening succeeds exactly when every device is present.

use collectives::typed::{Cpu, Cuda, Group, Members, Vulkan};
use collectives::{Error, device_group};

fn check<M: Members>(group: collectives::Result<Group<M>>) {
    let present = collectives::available_devices();
    match group {
        Ok(g) => assert!(g.devices().iter().all(|d| d.is_host() || present.contains(d))),
        Err(Error::DeviceUnavailable { device, .. }) => assert!(!present.contains(&device)),
        Err(e) => panic!("{e}"),
    }
}

fn main() {
    check::<(Cpu,)>(device_group!(Cpu));
    check::<(Cuda,)>(device_group!(Cuda));
    check::<(Vulkan,)>(device_group!(Vulkan));
    check::<(Cpu, Cpu)>(device_group!(Cpu, Cpu(1)));
    check::<(Cpu, Cuda)>(device_group!(Cpu, Cuda));
    check::<(Cpu, Vulkan)>(device_group!(Cpu, Vulkan));
    check::<(Cuda, Cpu)>(device_group!(Cuda, Cpu));
    check::<(Cuda, Cuda)>(device_group!(Cuda, Cuda(1)));
    check::<(Cuda, Vulkan)>(device_group!(Cuda, Vulkan));
    check::<(Vulkan, Cpu)>(device_group!(Vulkan, Cpu));
    check::<(Vulkan, Cuda)>(device_group!(Vulkan, Cuda));
    check::<(Vulkan, Vulkan)>(device_group!(Vulkan, Vulkan(1)));
    check::<(Cpu, Cpu, Cpu)>(device_group!(Cpu, Cpu(1), Cpu(2)));
    check::<(Cpu, Cpu, Cuda)>(device_group!(Cpu, Cpu(1), Cuda));
    check::<(Cpu, Cpu, Vulkan)>(device_group!(Cpu, Cpu(1), Vulkan));
    check::<(Cpu, Cuda, Cpu)>(device_group!(Cpu, Cuda, Cpu(1)));
    check::<(Cpu, Cuda, Cuda)>(device_group!(Cpu, Cuda, Cuda(1)));
    check::<(Cpu, Cuda, Vulkan)>(device_group!(Cpu, Cuda, Vulkan));
    check::<(Cpu, Vulkan, Cpu)>(device_group!(Cpu, Vulkan, Cpu(1)));
    check::<(Cpu, Vulkan, Cuda)>(device_group!(Cpu, Vulkan, Cuda));
    check::<(Cpu, Vulkan, Vulkan)>(device_group!(Cpu, Vulkan, Vulkan(1)));
    check::<(Cuda, Cpu, Cpu)>(device_group!(Cuda, Cpu, Cpu(1)));
    check::<(Cuda, Cpu, Cuda)>(device_group!(Cuda, Cpu, Cuda(1)));
    check::<(Cuda, Cpu, Vulkan)>(device_group!(Cuda, Cpu, Vulkan));
    check::<(Cuda, Cuda, Cpu)>(device_group!(Cuda, Cuda(1), Cpu));
    check::<(Cuda, Cuda, Cuda)>(device_group!(Cuda, Cuda(1), Cuda(2)));
    check::<(Cuda, Cuda, Vulkan)>(device_group!(Cuda, Cuda(1), Vulkan));
    check::<(Cuda, Vulkan, Cpu)>(device_group!(Cuda, Vulkan, Cpu));
    check::<(Cuda, Vulkan, Cuda)>(device_group!(Cuda, Vulkan, Cuda(1)));
    check::<(Cuda, Vulkan, Vulkan)>(device_group!(Cuda, Vulkan, Vulkan(1)));
    check::<(Vulkan, Cpu, Cpu)>(device_group!(Vulkan, Cpu, Cpu(1)));
    check::<(Vulkan, Cpu, Cuda)>(device_group!(Vulkan, Cpu, Cuda));
    check::<(Vulkan, Cpu, Vulkan)>(device_group!(Vulkan, Cpu, Vulkan(1)));
    check::<(Vulkan, Cuda, Cpu)>(device_group!(Vulkan, Cuda, Cpu));
    check::<(Vulkan, Cuda, Cuda)>(device_group!(Vulkan, Cuda, Cuda(1)));
    check::<(Vulkan, Cuda, Vulkan)>(device_group!(Vulkan, Cuda, Vulkan(1)));
    check::<(Vulkan, Vulkan, Cpu)>(device_group!(Vulkan, Vulkan(1), Cpu));
    check::<(Vulkan, Vulkan, Cuda)>(device_group!(Vulkan, Vulkan(1), Cuda));
    check::<(Vulkan, Vulkan, Vulkan)>(device_group!(Vulkan, Vulkan(1), Vulkan(2)));
    check::<(Cpu, Cpu, Cpu, Cpu)>(device_group!(Cpu, Cpu(1), Cpu(2), Cpu(3)));
    check::<(Cpu, Cpu, Cpu, Cuda)>(device_group!(Cpu, Cpu(1), Cpu(2), Cuda));
    check::<(Cpu, Cpu, Cpu, Vulkan)>(device_group!(Cpu, Cpu(1), Cpu(2), Vulkan));
    check::<(Cpu, Cpu, Cuda, Cpu)>(device_group!(Cpu, Cpu(1), Cuda, Cpu(2)));
    check::<(Cpu, Cpu, Cuda, Cuda)>(device_group!(Cpu, Cpu(1), Cuda, Cuda(1)));
    check::<(Cpu, Cpu, Cuda, Vulkan)>(device_group!(Cpu, Cpu(1), Cuda, Vulkan));
    check::<(Cpu, Cpu, Vulkan, Cpu)>(device_group!(Cpu, Cpu(1), Vulkan, Cpu(2)));
    check::<(Cpu, Cpu, Vulkan, Cuda)>(device_group!(Cpu, Cpu(1), Vulkan, Cuda));
    check::<(Cpu, Cpu, Vulkan, Vulkan)>(device_group!(Cpu, Cpu(1), Vulkan, Vulkan(1)));
    check::<(Cpu, Cuda, Cpu, Cpu)>(device_group!(Cpu, Cuda, Cpu(1), Cpu(2)));
    check::<(Cpu, Cuda, Cpu, Cuda)>(device_group!(Cpu, Cuda, Cpu(1), Cuda(1)));
    check::<(Cpu, Cuda, Cpu, Vulkan)>(device_group!(Cpu, Cuda, Cpu(1), Vulkan));
    check::<(Cpu, Cuda, Cuda, Cpu)>(device_group!(Cpu, Cuda, Cuda(1), Cpu(1)));
    check::<(Cpu, Cuda, Cuda, Cuda)>(device_group!(Cpu, Cuda, Cuda(1), Cuda(2)));
    check::<(Cpu, Cuda, Cuda, Vulkan)>(device_group!(Cpu, Cuda, Cuda(1), Vulkan));
    check::<(Cpu, Cuda, Vulkan, Cpu)>(device_group!(Cpu, Cuda, Vulkan, Cpu(1)));
    check::<(Cpu, Cuda, Vulkan, Cuda)>(device_group!(Cpu, Cuda, Vulkan, Cuda(1)));
    check::<(Cpu, Cuda, Vulkan, Vulkan)>(device_group!(Cpu, Cuda, Vulkan, Vulkan(1)));
    check::<(Cpu, Vulkan, Cpu, Cpu)>(device_group!(Cpu, Vulkan, Cpu(1), Cpu(2)));
    check::<(Cpu, Vulkan, Cpu, Cuda)>(device_group!(Cpu, Vulkan, Cpu(1), Cuda));
    check::<(Cpu, Vulkan, Cpu, Vulkan)>(device_group!(Cpu, Vulkan, Cpu(1), Vulkan(1)));
    check::<(Cpu, Vulkan, Cuda, Cpu)>(device_group!(Cpu, Vulkan, Cuda, Cpu(1)));
    check::<(Cpu, Vulkan, Cuda, Cuda)>(device_group!(Cpu, Vulkan, Cuda, Cuda(1)));
    check::<(Cpu, Vulkan, Cuda, Vulkan)>(device_group!(Cpu, Vulkan, Cuda, Vulkan(1)));
    check::<(Cpu, Vulkan, Vulkan, Cpu)>(device_group!(Cpu, Vulkan, Vulkan(1), Cpu(1)));
    check::<(Cpu, Vulkan, Vulkan, Cuda)>(device_group!(Cpu, Vulkan, Vulkan(1), Cuda));
    check::<(Cpu, Vulkan, Vulkan, Vulkan)>(device_group!(Cpu, Vulkan, Vulkan(1), Vulkan(2)));
    check::<(Cuda, Cpu, Cpu, Cpu)>(device_group!(Cuda, Cpu, Cpu(1), Cpu(2)));
    check::<(Cuda, Cpu, Cpu, Cuda)>(device_group!(Cuda, Cpu, Cpu(1), Cuda(1)));
    check::<(Cuda, Cpu, Cpu, Vulkan)>(device_group!(Cuda, Cpu, Cpu(1), Vulkan));
    check::<(Cuda, Cpu, Cuda, Cpu)>(device_group!(Cuda, Cpu, Cuda(1), Cpu(1)));
    check::<(Cuda, Cpu, Cuda, Cuda)>(device_group!(Cuda, Cpu, Cuda(1), Cuda(2)));
    check::<(Cuda, Cpu, Cuda, Vulkan)>(device_group!(Cuda, Cpu, Cuda(1), Vulkan));
    check::<(Cuda, Cpu, Vulkan, Cpu)>(device_group!(Cuda, Cpu, Vulkan, Cpu(1)));
    check::<(Cuda, Cpu, Vulkan, Cuda)>(device_group!(Cuda, Cpu, Vulkan, Cuda(1)));
    check::<(Cuda, Cpu, Vulkan, Vulkan)>(device_group!(Cuda, Cpu, Vulkan, Vulkan(1)));
    check::<(Cuda, Cuda, Cpu, Cpu)>(device_group!(Cuda, Cuda(1), Cpu, Cpu(1)));
    check::<(Cuda, Cuda, Cpu, Cuda)>(device_group!(Cuda, Cuda(1), Cpu, Cuda(2)));
    check::<(Cuda, Cuda, Cpu, Vulkan)>(device_group!(Cuda, Cuda(1), Cpu, Vulkan));
    check::<(Cuda, Cuda, Cuda, Cpu)>(device_group!(Cuda, Cuda(1), Cuda(2), Cpu));
    check::<(Cuda, Cuda, Cuda, Cuda)>(device_group!(Cuda, Cuda(1), Cuda(2), Cuda(3)));
    check::<(Cuda, Cuda, Cuda, Vulkan)>(device_group!(Cuda, Cuda(1), Cuda(2), Vulkan));
    check::<(Cuda, Cuda, Vulkan, Cpu)>(device_group!(Cuda, Cuda(1), Vulkan, Cpu));
    check::<(Cuda, Cuda, Vulkan, Cuda)>(device_group!(Cuda, Cuda(1), Vulkan, Cuda(2)));
    check::<(Cuda, Cuda, Vulkan, Vulkan)>(device_group!(Cuda, Cuda(1), Vulkan, Vulkan(1)));
    check::<(Cuda, Vulkan, Cpu, Cpu)>(device_group!(Cuda, Vulkan, Cpu, Cpu(1)));
    check::<(Cuda, Vulkan, Cpu, Cuda)>(device_group!(Cuda, Vulkan, Cpu, Cuda(1)));
    check::<(Cuda, Vulkan, Cpu, Vulkan)>(device_group!(Cuda, Vulkan, Cpu, Vulkan(1)));
    check::<(Cuda, Vulkan, Cuda, Cpu)>(device_group!(Cuda, Vulkan, Cuda(1), Cpu));
    check::<(Cuda, Vulkan, Cuda, Cuda)>(device_group!(Cuda, Vulkan, Cuda(1), Cuda(2)));
    check::<(Cuda, Vulkan, Cuda, Vulkan)>(device_group!(Cuda, Vulkan, Cuda(1), Vulkan(1)));
    check::<(Cuda, Vulkan, Vulkan, Cpu)>(device_group!(Cuda, Vulkan, Vulkan(1), Cpu));
    check::<(Cuda, Vulkan, Vulkan, Cuda)>(device_group!(Cuda, Vulkan, Vulkan(1), Cuda(1)));
    check::<(Cuda, Vulkan, Vulkan, Vulkan)>(device_group!(Cuda, Vulkan, Vulkan(1), Vulkan(2)));
    check::<(Vulkan, Cpu, Cpu, Cpu)>(device_group!(Vulkan, Cpu, Cpu(1), Cpu(2)));
    check::<(Vulkan, Cpu, Cpu, Cuda)>(device_group!(Vulkan, Cpu, Cpu(1), Cuda));
    check::<(Vulkan, Cpu, Cpu, Vulkan)>(device_group!(Vulkan, Cpu, Cpu(1), Vulkan(1)));
    check::<(Vulkan, Cpu, Cuda, Cpu)>(device_group!(Vulkan, Cpu, Cuda, Cpu(1)));
    check::<(Vulkan, Cpu, Cuda, Cuda)>(device_group!(Vulkan, Cpu, Cuda, Cuda(1)));
    check::<(Vulkan, Cpu, Cuda, Vulkan)>(device_group!(Vulkan, Cpu, Cuda, Vulkan(1)));
    check::<(Vulkan, Cpu, Vulkan, Cpu)>(device_group!(Vulkan, Cpu, Vulkan(1), Cpu(1)));
    check::<(Vulkan, Cpu, Vulkan, Cuda)>(device_group!(Vulkan, Cpu, Vulkan(1), Cuda));
    check::<(Vulkan, Cpu, Vulkan, Vulkan)>(device_group!(Vulkan, Cpu, Vulkan(1), Vulkan(2)));
    check::<(Vulkan, Cuda, Cpu, Cpu)>(device_group!(Vulkan, Cuda, Cpu, Cpu(1)));
    check::<(Vulkan, Cuda, Cpu, Cuda)>(device_group!(Vulkan, Cuda, Cpu, Cuda(1)));
    check::<(Vulkan, Cuda, Cpu, Vulkan)>(device_group!(Vulkan, Cuda, Cpu, Vulkan(1)));
    check::<(Vulkan, Cuda, Cuda, Cpu)>(device_group!(Vulkan, Cuda, Cuda(1), Cpu));
    check::<(Vulkan, Cuda, Cuda, Cuda)>(device_group!(Vulkan, Cuda, Cuda(1), Cuda(2)));
    check::<(Vulkan, Cuda, Cuda, Vulkan)>(device_group!(Vulkan, Cuda, Cuda(1), Vulkan(1)));
    check::<(Vulkan, Cuda, Vulkan, Cpu)>(device_group!(Vulkan, Cuda, Vulkan(1), Cpu));
    check::<(Vulkan, Cuda, Vulkan, Cuda)>(device_group!(Vulkan, Cuda, Vulkan(1), Cuda(1)));
    check::<(Vulkan, Cuda, Vulkan, Vulkan)>(device_group!(Vulkan, Cuda, Vulkan(1), Vulkan(2)));
    check::<(Vulkan, Vulkan, Cpu, Cpu)>(device_group!(Vulkan, Vulkan(1), Cpu, Cpu(1)));
    check::<(Vulkan, Vulkan, Cpu, Cuda)>(device_group!(Vulkan, Vulkan(1), Cpu, Cuda));
    check::<(Vulkan, Vulkan, Cpu, Vulkan)>(device_group!(Vulkan, Vulkan(1), Cpu, Vulkan(2)));
    check::<(Vulkan, Vulkan, Cuda, Cpu)>(device_group!(Vulkan, Vulkan(1), Cuda, Cpu));
    check::<(Vulkan, Vulkan, Cuda, Cuda)>(device_group!(Vulkan, Vulkan(1), Cuda, Cuda(1)));
    check::<(Vulkan, Vulkan, Cuda, Vulkan)>(device_group!(Vulkan, Vulkan(1), Cuda, Vulkan(2)));
    check::<(Vulkan, Vulkan, Vulkan, Cpu)>(device_group!(Vulkan, Vulkan(1), Vulkan(2), Cpu));
    check::<(Vulkan, Vulkan, Vulkan, Cuda)>(device_group!(Vulkan, Vulkan(1), Vulkan(2), Cuda));
    check::<(Vulkan, Vulkan, Vulkan, Vulkan)>(device_group!(Vulkan, Vulkan(1), Vulkan(2), Vulkan(3)));
}
