// See xrt_device.h: declarations only, for a syntax check of emitted host programs.
#pragma once
#include <cstddef>

#include "xrt/xrt_device.h"

enum xclBOSyncDirection { XCL_BO_SYNC_BO_TO_DEVICE = 0, XCL_BO_SYNC_BO_FROM_DEVICE };

namespace xrt {
class bo {
 public:
  bo(const device& device, size_t size, memory_group group);
  void write(const void* src);
  void read(void* dst);
  void sync(xclBOSyncDirection direction);
};
}  // namespace xrt
