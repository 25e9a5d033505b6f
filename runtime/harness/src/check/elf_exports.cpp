// Reads the dynamic symbol table of an ELF64 file (<elf.h>): what `nm -D --defined-only`
// prints, without depending on binutils at run time.
#include <attnrt/harness/conformance.hpp>
#include <attnrt/runtime/error.hpp>

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace attnrt {

std::vector<std::string> elf_exported_symbols(const std::filesystem::path& so) {
  std::ifstream in(so, std::ios::binary);
  if (!in) throw Error(so.string() + ": cannot open");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fail = [&](const char* why) { return Error(so.string() + ": " + why); };
  if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0)
    throw fail("not an ELF file");
  if (bytes[EI_CLASS] != ELFCLASS64) throw fail("not a 64-bit ELF file");
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shoff + uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr) > bytes.size()) {
    throw fail("malformed section table");
  }
  auto section = [&](size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, bytes.data() + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof sh);
    return sh;
  };
  std::vector<std::string> names;
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section(i);
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_link >= eh.e_shnum) throw fail("malformed .dynsym link");
    const Elf64_Shdr strtab = section(sh.sh_link);
    if (sh.sh_offset + sh.sh_size > bytes.size() || strtab.sh_offset + strtab.sh_size > bytes.size())
      throw fail("truncated symbols");
    for (uint64_t off = sh.sh_offset; off + sizeof(Elf64_Sym) <= sh.sh_offset + sh.sh_size; off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, bytes.data() + off, sizeof sym);
      const unsigned bind = ELF64_ST_BIND(sym.st_info), vis = ELF64_ST_VISIBILITY(sym.st_other);
      if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0 || (bind != STB_GLOBAL && bind != STB_WEAK) ||
          vis == STV_HIDDEN || vis == STV_INTERNAL) {
        continue;
      }
      if (sym.st_name >= strtab.sh_size) throw fail("symbol name outside its string table");
      names.emplace_back(bytes.c_str() + strtab.sh_offset + sym.st_name);
    }
  }
  return names;
}

}  // namespace attnrt
