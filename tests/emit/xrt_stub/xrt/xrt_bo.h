// See xrt_device.h: declarations only, for a syntax check of emitted host programs.
#pragma once
#include <cstddef>

#include "xrt/xrt_device.h"

enum xclBOSyncDirection { XCL_BO_SYNC_BO_TO_DEVICE = 0, XCL_BO_SYNC_BO_FROM_DEVICE };

namespace xrt {
class bo {
 public:
  bo(const device& device, size_t size, memory_group group);
  size_t size() const;
  void write(const void* src, size_t size, size_t seek);
  void write(const void* src);
  void read(void* dst, size_t size, size_t skip);
  void read(void* dst);
  void sync(xclBOSyncDirection direction, size_t size, size_t offset);
  void sync(xclBOSyncDirection direction);
};
}  // namespace xrt
