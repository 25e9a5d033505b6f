// prelude.h for C++ code of the host (the plugins that fill attnrt_flex::Context).
#pragma once

#ifndef ATTNRT_FLEX_FN
#define ATTNRT_FLEX_FN inline
#endif
#include <attnrt_kernels/flex/prelude.h>
