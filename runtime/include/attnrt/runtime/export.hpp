// What libattnrt exports. The library is built with hidden visibility and a linker version
// script (runtime/src/api/libattnrt.map); ATTNRT_API marks the C++ API in these installed
// headers, the only C++ symbols a host (and attnrt's own CLI and tests) can link against. The
// C host API (host_api.h) marks its functions with ATTNRT_HOST_API.
#pragma once

#define ATTNRT_API __attribute__((visibility("default")))
