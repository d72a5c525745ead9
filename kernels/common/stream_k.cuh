// Stream-K: `units` units of work (tiles x chunks, tile-major) cut into one
// contiguous range per CTA, ranges differing by at most one unit. A tile cut
// between CTAs is summed from the partials of its CTAs, in CTA order.
#pragma once
#include "common/host_device.cuh"

namespace kestrel {

struct StreamK {
  long long units;
  int ctas;

  // CTA c owns units [begin(c), begin(c + 1)).
  KESTREL_HD long long begin(int c) const { return units * c / ctas; }
  // The CTA whose range holds unit u.
  KESTREL_HD int owner(long long u) const {
    return int(((u + 1) * ctas + units - 1) / units) - 1;
  }
  // Which of CTA c's two partial slots holds its share of the tile starting at
  // unit u0: 0 if that tile is the CTA's first (its range starts in it), 1 if
  // its last. Only the tile's first CTA can have started earlier.
  KESTREL_HD int slot(int c, long long u0) const { return begin(c) < u0 ? 1 : 0; }
};

}  // namespace kestrel
