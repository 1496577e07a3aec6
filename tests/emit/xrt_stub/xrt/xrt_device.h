// Declarations of the part of XRT's native C++ API (xrt/xrt_device.h) emitted host programs use, so the
// tests can check that host/host.cpp compiles (-fsyntax-only) where XRT is not installed. Not an
// implementation: nothing here links or runs.
#pragma once
#include <string>

namespace xrt {
class uuid {};
class device {
 public:
  explicit device(unsigned int index);
  uuid load_xclbin(const std::string& path);
};
using memory_group = int;
}  // namespace xrt
