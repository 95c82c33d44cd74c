cd /work/main
export VK_LOADER_LAYERS_ENABLE='*validation*' REQUIRE_VULKAN=1
D=target/release/deps; O=bench/vulkan-validation
run() { local name=$1 bin=$2; shift 2; local s=$(date +%s)
  timeout 1500 $bin "$@" > $O/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-s ))s $(grep -E '^test result' $O/$name.log | tail -1)"; }
run lib $D/collectives-6a5bcce9662aea53 vulkan
run vulkan_collectives $D/vulkan_collectives-14bc92ea2ff1b78c
run typed $D/typed-ba8d4b398a8f5d52
run device_groups $D/device_groups-07cd6c4a4f355a78
run vulkan_ops $D/vulkan_ops-0b4b6e7aef89ae72
