// See xrt_device.h: declarations only, for a syntax check of emitted host programs.
#pragma once
#include <string>

#include "xrt/xrt_bo.h"
#include "xrt/xrt_device.h"

namespace xrt {
class kernel;
class run {
 public:
  run() = default;
  explicit run(const kernel& krnl);
  template <typename ArgType>
  void set_arg(int index, ArgType&& arg);
  void start();
  int wait();
};
class kernel {
 public:
  kernel(const device& device, const uuid& xclbin, const std::string& name);
  memory_group group_id(int argument) const;
  template <typename... Args>
  run operator()(Args&&... args);
};
}  // namespace xrt
