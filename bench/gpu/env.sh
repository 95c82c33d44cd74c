# Sourced first by every GPU script: the Vulkan loader, and the NVIDIA driver's Vulkan ICD
# through libEGL_nvidia (headless: libGLX_nvidia gives the loader no vkCreateInstance here).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
printf '{"file_format_version":"1.0.1","ICD":{"library_path":"libEGL_nvidia.so.0","api_version":"1.4.312"}}' > /tmp/nvidia_egl_icd.json
export VK_DRIVER_FILES=/tmp/nvidia_egl_icd.json
L=$OUT/logs; mkdir -p $L
