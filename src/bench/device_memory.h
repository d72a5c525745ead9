// Owning device allocation for benchmark inputs, outputs and scratch. The
// harness keeps every buffer of a case alive in the case's closures, so this
// frees itself when the last closure goes.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kestrel/status.h"

namespace kestrel::bench {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) {
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  ~DeviceBuffer();

  // Frees what was held, then allocates `bytes` (contents undefined).
  Status allocate(size_t bytes);
  // Host -> device copy of `bytes` to byte offset `offset`, synchronous.
  Status upload(const void* host, size_t bytes, size_t offset = 0);
  // Device -> host copy of `bytes` from byte offset `offset`, synchronous.
  Status download(void* host, size_t bytes, size_t offset = 0) const;
  // Sets every byte to `value` (the poison of outputs under check).
  Status fill(uint8_t value);

  void* get() const { return ptr_; }
  uint8_t* bytes_at(size_t offset) const { return static_cast<uint8_t*>(ptr_) + offset; }
  size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// `slots` equally sized copies of one tensor in one allocation, each starting
// on a 256-byte boundary: the rotating inputs/outputs of Timer's graph mode.
class SlottedBuffer {
 public:
  Status allocate(size_t bytes_per_slot, int slots) {
    stride_ = (bytes_per_slot + 255) / 256 * 256;
    slots_ = slots;
    return buffer_.allocate(stride_ * size_t(slots));
  }
  void* at(int slot) const { return buffer_.bytes_at(stride_ * size_t(slot)); }
  // Copies the same host bytes into every slot.
  Status upload_all(const void* host, size_t bytes) {
    for (int s = 0; s < slots_; ++s)
      KESTREL_RETURN_IF_ERROR(buffer_.upload(host, bytes, stride_ * size_t(s)));
    return Status::Ok();
  }

 private:
  DeviceBuffer buffer_;
  size_t stride_ = 0;
  int slots_ = 0;
};

}  // namespace kestrel::bench
