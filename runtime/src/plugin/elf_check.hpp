// Checks a shared library's ELF structure before it is handed to the dynamic loader (dlopen):
// ld.so maps every loadable segment straight from the file and trusts the headers, so a plugin
// truncated by a failed copy or damaged on disk makes the first touch of a missing page kill the
// host with SIGBUS, or a wild relocation corrupt it. This refuses such files with a reason
// instead. It cannot tell damaged machine code from good code (only a digest pin can).
#pragma once

#include <filesystem>
#include <string>

namespace attnrt {

// "" when `path` is an ELF shared object this host can load as far as its structure shows;
// otherwise why not, for example "ELF class 32-bit; this host loads 64-bit", "program header 2
// (LOAD) at offset 0x1000 with 0x8000 bytes ends past the end of the file (20000 bytes):
// truncated?". Checked: identification (magic, class, byte order, version), type ET_DYN,
// machine, the program header table and every segment's file range, the section header table
// and every section's file range, the dynamic section and the tables it points at (strings,
// symbols, relocations, init/fini arrays) inside file-backed loadable memory, and every
// relocation's target inside a loadable segment and symbol inside the symbol table.
std::string elf_problem(const std::filesystem::path& path);

}  // namespace attnrt
