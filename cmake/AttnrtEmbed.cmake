# cmake -DINPUT=<file> -DOUTPUT=<file.cpp> -DNAME=<symbol> -P AttnrtEmbed.cmake: writes a C++ source
# that defines `extern const unsigned char NAME[]` and `extern const std::size_t NAME_size`
# with the input's bytes (flex_attention's LTO-IR kernels, embedded in its CUDA plugin).
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){32})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/AttnrtEmbed.cmake.\n#include <cstddef>\n\n"
  "extern const unsigned char ${NAME}[] = {\n${bytes}0};\nextern const std::size_t ${NAME}_size = ${size};\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
