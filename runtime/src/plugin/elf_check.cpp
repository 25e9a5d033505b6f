// The checks follow the System V ABI's ELF chapter (<elf.h>) and what glibc's ld.so does with
// each field on dlopen (elf/dl-load.c maps PT_LOAD segments; elf/dl-reloc.c applies relocations
// at the addresses named, reading symbols by index). Every read is bounds-checked against the
// file's size, read with pread, never mapped: a file shrinking meanwhile cannot fault here.
#include "elf_check.hpp"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace attnrt {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#elif defined(__powerpc64__)
constexpr uint16_t kHostMachine = EM_PPC64;
#elif defined(__riscv) && __riscv_xlen == 64
constexpr uint16_t kHostMachine = EM_RISCV;
#else
#error "attnrt's ELF check knows no machine number for this host"
#endif
static_assert(sizeof(void*) == 8, "attnrt's ELF check reads ELF64 only");
#if defined(__x86_64__)
constexpr uint32_t kRelativeRelocation = R_X86_64_RELATIVE;
#elif defined(__aarch64__)
constexpr uint32_t kRelativeRelocation = R_AARCH64_RELATIVE;
#elif defined(__powerpc64__)
constexpr uint32_t kRelativeRelocation = R_PPC64_RELATIVE;
#else
constexpr uint32_t kRelativeRelocation = R_RISCV_RELATIVE;
#endif

std::string machine_name(uint16_t m) {
  switch (m) {
    case EM_386: return "x86 (32-bit)";
    case EM_X86_64: return "x86-64";
    case EM_ARM: return "arm (32-bit)";
    case EM_AARCH64: return "aarch64";
    case EM_PPC64: return "ppc64";
    case EM_RISCV: return "riscv";
    case EM_CUDA: return "CUDA (a device image, not a host library)";
    default: return fmt::format("machine {}", m);
  }
}

std::string segment_name(uint32_t type) {
  switch (type) {
    case PT_LOAD: return "LOAD";
    case PT_DYNAMIC: return "DYNAMIC";
    case PT_INTERP: return "INTERP";
    case PT_NOTE: return "NOTE";
    case PT_PHDR: return "PHDR";
    case PT_TLS: return "TLS";
    case PT_GNU_EH_FRAME: return "GNU_EH_FRAME";
    case PT_GNU_PROPERTY: return "GNU_PROPERTY";
    case PT_GNU_RELRO: return "GNU_RELRO";
    default: return fmt::format("type 0x{:x}", type);
  }
}

// a + b <= limit without wrapping around.
bool fits(uint64_t offset, uint64_t length, uint64_t limit) { return offset <= limit && length <= limit - offset; }

class ElfFile {
 public:
  explicit ElfFile(const std::filesystem::path& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~ElfFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  bool opened() const { return fd_ >= 0; }
  uint64_t size() const {
    const off_t end = ::lseek(fd_, 0, SEEK_END);
    return end < 0 ? 0 : static_cast<uint64_t>(end);
  }
  template <typename T>
  bool read(uint64_t offset, T* out) const {
    return read_bytes(offset, out, sizeof(T));
  }
  bool read_bytes(uint64_t offset, void* out, size_t n) const {
    char* p = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (got <= 0) return false;
      p += got;
      n -= static_cast<size_t>(got);
      offset += static_cast<uint64_t>(got);
    }
    return true;
  }

 private:
  int fd_;
};

class Checker {
 public:
  explicit Checker(const std::filesystem::path& path) : file_(path) {}

  std::string run() {
    if (!file_.opened()) return "cannot open the file";
    size_ = file_.size();
    if (std::string p = identification(); !p.empty()) return p;
    if (std::string p = program_headers(); !p.empty()) return p;
    if (std::string p = section_headers(); !p.empty()) return p;
    return dynamic_section();
  }

 private:
  std::string identification() {
    unsigned char ident[EI_NIDENT] = {};
    if (size_ < SELFMAG || !file_.read_bytes(0, ident, SELFMAG) || std::memcmp(ident, ELFMAG, SELFMAG) != 0)
      return "not an ELF file";
    if (size_ < EI_NIDENT || !file_.read_bytes(0, ident, EI_NIDENT))
      return fmt::format("file of {} bytes is too short for an ELF header", size_);
    if (ident[EI_CLASS] != ELFCLASS64) {
      return fmt::format("ELF class {}; this host loads 64-bit",
                         ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : fmt::format("{} (invalid)", ident[EI_CLASS]));
    }
    const unsigned char host_order = std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;
    if (ident[EI_DATA] != host_order) return "ELF byte order differs from this host's";
    if (ident[EI_VERSION] != EV_CURRENT)
      return fmt::format("ELF version {} (expected {})", ident[EI_VERSION], EV_CURRENT);
    if (size_ < sizeof(Elf64_Ehdr) || !file_.read(0, &eh_))
      return fmt::format("file of {} bytes is too short for an ELF header", size_);
    if (eh_.e_type != ET_DYN) {
      return fmt::format("ELF type {}, not a shared object", eh_.e_type == ET_EXEC  ? "EXEC (an executable)"
                                                             : eh_.e_type == ET_REL ? "REL (an object file)"
                                                                                    : std::to_string(eh_.e_type));
    }
    if (eh_.e_machine != kHostMachine) {
      return fmt::format("built for {}; this host is {}", machine_name(eh_.e_machine), machine_name(kHostMachine));
    }
    return "";
  }

  std::string program_headers() {
    if (eh_.e_phnum == 0 || eh_.e_phnum == PN_XNUM) return "no program headers";
    if (eh_.e_phentsize != sizeof(Elf64_Phdr))
      return fmt::format("program header size {} (expected {})", eh_.e_phentsize, sizeof(Elf64_Phdr));
    if (!fits(eh_.e_phoff, uint64_t{eh_.e_phnum} * sizeof(Elf64_Phdr), size_)) {
      return fmt::format("program header table at offset 0x{:x} ({} entries) ends past the end of the file ({} bytes)",
                         eh_.e_phoff, eh_.e_phnum, size_);
    }
    phdrs_.resize(eh_.e_phnum);
    if (!file_.read_bytes(eh_.e_phoff, phdrs_.data(), phdrs_.size() * sizeof(Elf64_Phdr)))
      return "cannot read the program headers";
    int loads = 0;
    for (size_t i = 0; i < phdrs_.size(); ++i) {
      const Elf64_Phdr& ph = phdrs_[i];
      if (ph.p_filesz > 0 && !fits(ph.p_offset, ph.p_filesz, size_)) {
        return fmt::format(
            "program header {} ({}) at offset 0x{:x} with 0x{:x} bytes ends past the end of the file ({} bytes): "
            "truncated?",
            i, segment_name(ph.p_type), ph.p_offset, ph.p_filesz, size_);
      }
      if (ph.p_type != PT_LOAD) continue;
      ++loads;
      // ld.so reads the headers and tables through these mappings: readable, and no flag bits
      // that no loader knows.
      if (!(ph.p_flags & PF_R) || (ph.p_flags & ~uint32_t{PF_R | PF_W | PF_X}) != 0)
        return fmt::format("program header {} (LOAD) has the flags 0x{:x} (expected readable, R/W/X only)", i,
                           ph.p_flags);
      if (ph.p_filesz > ph.p_memsz) {
        return fmt::format("program header {} (LOAD) has more bytes in the file (0x{:x}) than in memory (0x{:x})", i,
                           ph.p_filesz, ph.p_memsz);
      }
      if (!fits(ph.p_vaddr, ph.p_memsz, std::numeric_limits<uint64_t>::max()))
        return fmt::format("program header {} (LOAD) wraps around the address space", i);
    }
    if (loads == 0) return "no loadable segment";
    for (size_t i = 0; i < phdrs_.size(); ++i) {
      const Elf64_Phdr& ph = phdrs_[i];
      // ld.so zero-fills a segment's memory past its file bytes: only a writable one can be.
      if (ph.p_type == PT_LOAD && ph.p_memsz > ph.p_filesz && !(ph.p_flags & PF_W)) {
        return fmt::format("program header {} (LOAD) is read-only but has 0x{:x} bytes to zero-fill", i,
                           ph.p_memsz - ph.p_filesz);
      }
      // What ld.so protects, reads or sets up inside the mapped image lies inside it.
      if ((ph.p_type == PT_GNU_RELRO || ph.p_type == PT_TLS || ph.p_type == PT_DYNAMIC ||
           ph.p_type == PT_GNU_EH_FRAME) &&
          (ph.p_filesz > ph.p_memsz || !in_memory(ph.p_vaddr, ph.p_memsz))) {
        return fmt::format("program header {} ({}) at 0x{:x} with 0x{:x} bytes lies outside the loadable segments", i,
                           segment_name(ph.p_type), ph.p_vaddr, ph.p_memsz);
      }
    }
    return "";
  }

  std::string section_headers() {
    if (eh_.e_shoff == 0 && eh_.e_shnum == 0) return "";  // sections are optional for loading
    if (eh_.e_shentsize != sizeof(Elf64_Shdr))
      return fmt::format("section header size {} (expected {})", eh_.e_shentsize, sizeof(Elf64_Shdr));
    if (!fits(eh_.e_shoff, uint64_t{eh_.e_shnum} * sizeof(Elf64_Shdr), size_)) {
      return fmt::format(
          "section header table at offset 0x{:x} ({} entries) ends past the end of the file ({} bytes): truncated?",
          eh_.e_shoff, eh_.e_shnum, size_);
    }
    if (eh_.e_shstrndx != SHN_UNDEF && eh_.e_shstrndx >= eh_.e_shnum)
      return fmt::format("section name table index {} is past the {} sections", eh_.e_shstrndx, eh_.e_shnum);
    std::vector<Elf64_Shdr> shdrs(eh_.e_shnum);
    if (!shdrs.empty() && !file_.read_bytes(eh_.e_shoff, shdrs.data(), shdrs.size() * sizeof(Elf64_Shdr)))
      return "cannot read the section headers";
    for (size_t i = 0; i < shdrs.size(); ++i) {
      const Elf64_Shdr& sh = shdrs[i];
      if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL) continue;
      if (!fits(sh.sh_offset, sh.sh_size, size_)) {
        return fmt::format(
            "section {} at offset 0x{:x} with 0x{:x} bytes ends past the end of the file ({} bytes): truncated?", i,
            sh.sh_offset, sh.sh_size, size_);
      }
      if (sh.sh_type == SHT_PROGBITS && (sh.sh_flags & SHF_EXECINSTR)) code_sections_.push_back(sh.sh_addr);
      if (sh.sh_type == SHT_DYNSYM && sh.sh_entsize == sizeof(Elf64_Sym))
        dynsym_count_ = sh.sh_size / sizeof(Elf64_Sym);
    }
    return "";
  }

  // The file offset of `length` bytes at virtual address `vaddr`, when a loadable segment holds
  // them in its file-backed part.
  std::optional<uint64_t> file_offset(uint64_t vaddr, uint64_t length) const {
    for (const Elf64_Phdr& ph : phdrs_) {
      if (ph.p_type != PT_LOAD || vaddr < ph.p_vaddr) continue;
      if (fits(vaddr - ph.p_vaddr, length, ph.p_filesz)) return ph.p_offset + (vaddr - ph.p_vaddr);
    }
    return std::nullopt;
  }
  bool in_memory(uint64_t vaddr, uint64_t length) const {
    for (const Elf64_Phdr& ph : phdrs_) {
      if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && fits(vaddr - ph.p_vaddr, length, ph.p_memsz)) return true;
    }
    return false;
  }
  bool in_writable(uint64_t vaddr, uint64_t length) const {
    for (const Elf64_Phdr& ph : phdrs_) {
      if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W) && vaddr >= ph.p_vaddr &&
          fits(vaddr - ph.p_vaddr, length, ph.p_memsz))
        return true;
    }
    return false;
  }
  // Code the loader may call (an init function, an exported function): in an executable
  // segment's file-backed part.
  bool in_code(uint64_t vaddr) const {
    for (const Elf64_Phdr& ph : phdrs_) {
      if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz)
        return true;
    }
    return false;
  }

  static bool is_address_tag(int64_t tag) {
    switch (tag) {
      case DT_PLTGOT:
      case DT_HASH:
      case DT_STRTAB:
      case DT_SYMTAB:
      case DT_RELA:
      case DT_INIT:
      case DT_FINI:
      case DT_JMPREL:
      case DT_INIT_ARRAY:
      case DT_FINI_ARRAY:
      case DT_PREINIT_ARRAY:
      case DT_GNU_HASH:
      case DT_VERSYM:
      case DT_VERNEED:
      case DT_VERDEF: return true;
      default: return false;
    }
  }

  // The chains of version needs and definitions (ld.so walks them by their next offsets).
  std::string version_needs(uint64_t addr, uint64_t count, uint64_t strsz) {
    if (addr == 0) return "";
    if (count > 4096) return fmt::format("{} version needs", count);
    // ld.so follows the next offsets until one is 0, whatever the counts say: so does this.
    for (uint64_t i = 0;; ++i) {
      if (i >= 4096) return "the version needs do not end";
      Elf64_Verneed vn;
      const std::optional<uint64_t> at = file_offset(addr, sizeof vn);
      if (!at || !file_.read(*at, &vn)) return "a version need lies outside the file";
      if (vn.vn_file >= strsz || vn.vn_cnt == 0 || vn.vn_cnt > 4096) return "a version need is malformed";
      // ld.so asserts that each names a library the object needs (elf/dl-version.c).
      if (std::find(needed_names_.begin(), needed_names_.end(), std::string(strings_.c_str() + vn.vn_file)) ==
          needed_names_.end())
        return fmt::format("a version need names '{}', which is not a needed library", strings_.c_str() + vn.vn_file);
      uint64_t aux = addr + vn.vn_aux;
      for (uint32_t k = 0;; ++k) {
        if (k >= 4096) return "a version need's entries do not end";
        Elf64_Vernaux va;
        const std::optional<uint64_t> aat = file_offset(aux, sizeof va);
        if (!aat || !file_.read(*aat, &va)) return "a version need entry lies outside the file";
        if (va.vna_name >= strsz) return "a version need entry names a string past the string table";
        max_version_ = std::max<uint64_t>(max_version_, va.vna_other & 0x7fff);
        if (va.vna_next == 0) break;
        aux += va.vna_next;
      }
      if (vn.vn_next == 0) break;
      addr += vn.vn_next;
    }
    return "";
  }
  std::string version_definitions(uint64_t addr, uint64_t count, uint64_t strsz) {
    if (addr == 0) return "";
    if (count > 4096) return fmt::format("{} version definitions", count);
    for (uint64_t i = 0;; ++i) {
      if (i >= 4096) return "the version definitions do not end";
      Elf64_Verdef vd;
      const std::optional<uint64_t> at = file_offset(addr, sizeof vd);
      if (!at || !file_.read(*at, &vd)) return "a version definition lies outside the file";
      max_version_ = std::max<uint64_t>(max_version_, vd.vd_ndx & 0x7fff);
      if (vd.vd_cnt > 0) {
        Elf64_Verdaux va;
        const std::optional<uint64_t> aat = file_offset(addr + vd.vd_aux, sizeof va);
        if (!aat || !file_.read(*aat, &va) || va.vda_name >= strsz) return "a version definition is malformed";
      }
      if (vd.vd_next == 0) break;
      addr += vd.vd_next;
    }
    return "";
  }

  // Defined dynamic symbols point where their kind says: functions into code, data into
  // loadable memory; names inside the string table.
  std::string symbols(uint64_t symtab, uint64_t strsz) {
    if (dynsym_count_ == 0) return "";
    std::vector<Elf64_Sym> syms(dynsym_count_);
    if (!file_.read_bytes(*file_offset(symtab, dynsym_count_ * sizeof(Elf64_Sym)), syms.data(),
                          syms.size() * sizeof(Elf64_Sym)))
      return "cannot read the dynamic symbol table";
    for (size_t i = 0; i < syms.size(); ++i) {
      const Elf64_Sym& sym = syms[i];
      if (sym.st_name >= strsz) return fmt::format("dynamic symbol {} has its name past the string table", i);
      if (sym.st_shndx == SHN_UNDEF && ELF64_ST_VISIBILITY(sym.st_other) != STV_DEFAULT)
        return fmt::format("dynamic symbol {} is undefined but not of default visibility", i);
      if (sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS) continue;
      const unsigned type = ELF64_ST_TYPE(sym.st_info);
      if (type == STT_TLS) continue;
      if ((type == STT_FUNC || type == STT_GNU_IFUNC) && !in_code(sym.st_value))
        return fmt::format("dynamic symbol {} is a function at 0x{:x}, outside the code", i, sym.st_value);
      if (type == STT_OBJECT && !in_memory(sym.st_value, sym.st_size))
        return fmt::format("dynamic symbol {} is data at 0x{:x}, outside loadable memory", i, sym.st_value);
    }
    return "";
  }

  // DT_VERSYM: one version index per dynamic symbol, each one the version tables define (ld.so
  // indexes its array of versions with it unchecked).
  std::string symbol_versions(uint64_t addr) {
    if (addr == 0 || dynsym_count_ == 0) return "";
    const std::optional<uint64_t> at = file_offset(addr, dynsym_count_ * sizeof(Elf64_Half));
    std::vector<Elf64_Half> versions(dynsym_count_);
    if (!at || !file_.read_bytes(*at, versions.data(), versions.size() * sizeof(Elf64_Half)))
      return "the symbol version table lies outside the file";
    for (size_t i = 0; i < versions.size(); ++i) {
      if ((versions[i] & 0x7fffu) > max_version_)
        return fmt::format("dynamic symbol {} has version index {}, past the {} versions defined", i,
                           versions[i] & 0x7fffu, max_version_);
    }
    return "";
  }

  // DT_GNU_HASH (the table ld.so and dlsym look symbols up in): header, bloom filter and buckets
  // in the file, every bucket naming a symbol of the table.
  std::string gnu_hash(uint64_t addr) {
    if (addr == 0) return "";
    uint32_t head[4];  // nbuckets, symoffset, bloom_size, bloom_shift
    const std::optional<uint64_t> at = file_offset(addr, sizeof head);
    if (!at || !file_.read(*at, &head)) return "the GNU hash table lies outside the file";
    const uint64_t nbuckets = head[0], symoffset = head[1], bloom = head[2];
    const uint64_t table_bytes = sizeof head + bloom * 8 + nbuckets * 4;
    if (nbuckets == 0 || bloom == 0 || (bloom & (bloom - 1)) != 0 || head[3] >= 64 || !file_offset(addr, table_bytes))
      return "the GNU hash table is malformed";
    std::vector<uint32_t> buckets(nbuckets);
    if (!file_.read_bytes(*at + sizeof head + bloom * 8, buckets.data(), nbuckets * 4))
      return "cannot read the GNU hash table";
    for (uint32_t b : buckets) {
      if (b != 0 && (b < symoffset || (dynsym_count_ && b >= dynsym_count_)))
        return fmt::format("the GNU hash table names symbol {} outside the symbol table", b);
    }
    if (dynsym_count_ > symoffset && !file_offset(addr + table_bytes, (dynsym_count_ - symoffset) * 4))
      return "the GNU hash chains lie outside the file";
    return "";
  }

  std::string dynamic_section() {
    const Elf64_Phdr* dyn = nullptr;
    for (const Elf64_Phdr& ph : phdrs_) {
      if (ph.p_type == PT_DYNAMIC) dyn = &ph;
    }
    if (dyn == nullptr) return "no dynamic section (PT_DYNAMIC): not a shared library";
    const std::optional<uint64_t> at = file_offset(dyn->p_vaddr, dyn->p_filesz);
    if (!at) return "the dynamic section lies outside the file-backed part of every loadable segment";
    std::vector<Elf64_Dyn> entries(dyn->p_filesz / sizeof(Elf64_Dyn));
    if (!entries.empty() && !file_.read_bytes(*at, entries.data(), entries.size() * sizeof(Elf64_Dyn)))
      return "cannot read the dynamic section";
    uint64_t init = 0, fini = 0, hash = 0;
    uint64_t strtab = 0, strsz = 0, symtab = 0, rela = 0, relasz = 0, relaent = sizeof(Elf64_Rela), jmprel = 0,
             pltrelsz = 0, pltrel = DT_RELA;
    bool terminated = false;
    std::vector<uint64_t> string_refs;  // DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH offsets
    std::vector<uint64_t> needed;       // DT_NEEDED offsets
    struct Table {
      const char* name;
      int64_t addr_tag, size_tag;
      uint64_t addr = 0, size = 0;
      bool present = false;
    };
    Table tables[] = {{"init array", DT_INIT_ARRAY, DT_INIT_ARRAYSZ},
                      {"fini array", DT_FINI_ARRAY, DT_FINI_ARRAYSZ},
                      {"preinit array", DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ}};
    uint64_t versym = 0, verneed = 0, verneednum = 0, verdef = 0, verdefnum = 0, relacount = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      const Elf64_Dyn& d = entries[i];
      const uint64_t v = d.d_un.d_val;
      // ld.so files each tag by range arithmetic on its low 32 bits (elf/get-dynamic-info.h):
      // an unknown tag lands in an unrelated slot, so only the standard and OS/processor
      // ranges are accepted.
      if (d.d_tag < 0 || (d.d_tag >= DT_NUM && d.d_tag < DT_LOOS) || d.d_tag > DT_HIPROC)
        return fmt::format("dynamic entry {} has the unknown tag 0x{:x}", i, static_cast<uint64_t>(d.d_tag));
      if (is_address_tag(d.d_tag) && v != 0 && !in_memory(v, 0))
        return fmt::format("dynamic entry {} (tag 0x{:x}) points at 0x{:x}, outside the object's memory", i,
                           static_cast<uint64_t>(d.d_tag), v);
      switch (d.d_tag) {
        case DT_SYMENT:
          if (v != sizeof(Elf64_Sym)) return fmt::format("symbol entry size {} (expected {})", v, sizeof(Elf64_Sym));
          break;
        case DT_RELACOUNT: relacount = v; break;
        case DT_TEXTREL: return "text relocations (DT_TEXTREL): not built as position-independent code";
        case DT_VERSYM: versym = v; break;
        case DT_VERNEED: verneed = v; break;
        case DT_VERNEEDNUM: verneednum = v; break;
        case DT_VERDEF: verdef = v; break;
        case DT_VERDEFNUM: verdefnum = v; break;
        case DT_NULL: terminated = true; break;
        case DT_STRTAB: strtab = v; break;
        case DT_STRSZ: strsz = v; break;
        case DT_SYMTAB: symtab = v; break;
        case DT_RELA: rela = v; break;
        case DT_RELASZ: relasz = v; break;
        case DT_RELAENT: relaent = v; break;
        case DT_JMPREL: jmprel = v; break;
        case DT_PLTRELSZ: pltrelsz = v; break;
        case DT_PLTREL: pltrel = v; break;
        case DT_INIT: init = v; break;
        case DT_FINI: fini = v; break;
        case DT_GNU_HASH: hash = v; break;
        case DT_REL:
        case DT_RELR: return "REL/RELR relocations; x86-64 and aarch64 shared objects use RELA";
        case DT_NEEDED: needed.push_back(v), string_refs.push_back(v); break;
        case DT_SONAME:
        case DT_RPATH:
        case DT_RUNPATH: string_refs.push_back(v); break;
        default:
          for (Table& t : tables) {
            if (d.d_tag == t.addr_tag) t.addr = v, t.present = true;
            if (d.d_tag == t.size_tag) t.size = v;
          }
      }
      if (terminated) break;
    }
    if (!terminated) return "the dynamic section has no DT_NULL terminator";
    if (strtab == 0 || !file_offset(strtab, strsz)) return "the dynamic string table lies outside the file";
    if (strsz > (64u << 20)) return fmt::format("a dynamic string table of {} bytes", strsz);
    strings_.resize(strsz);
    if (strsz && !file_.read_bytes(*file_offset(strtab, strsz), strings_.data(), strsz))
      return "cannot read the dynamic string table";
    for (uint64_t ref : needed) {
      if (ref < strsz) needed_names_.push_back(strings_.c_str() + ref);
    }
    if (std::string p = version_needs(verneed, verneednum, strsz); !p.empty()) return p;
    if (std::string p = version_definitions(verdef, verdefnum, strsz); !p.empty()) return p;
    for (uint64_t ref : string_refs) {
      if (ref >= strsz)
        return fmt::format("a dynamic entry names string offset {} past the string table ({})", ref, strsz);
    }
    if (symtab == 0 || !file_offset(symtab, sizeof(Elf64_Sym))) return "the dynamic symbol table lies outside the file";
    if (dynsym_count_ && !file_offset(symtab, dynsym_count_ * sizeof(Elf64_Sym)))
      return "the dynamic symbol table lies outside the file";
    for (const Table& t : tables) {
      if (t.present && (t.size % sizeof(uint64_t) != 0 || !file_offset(t.addr, t.size)))
        return fmt::format("the {} lies outside the file", t.name);
      // ld.so calls each entry, after the relocations wrote it: the array is data a writable
      // segment holds (RELRO until relocated). Moved into the code or read-only data, its "entries"
      // are whatever bytes are there.
      if (t.present && t.size > 0 && !in_writable(t.addr, t.size))
        return fmt::format("the {} at 0x{:x} lies outside every writable loadable segment", t.name, t.addr);
      if (t.present) called_arrays_.push_back({t.addr, t.size});
    }
    if ((init && !in_code(init)) || (fini && !in_code(fini))) return "DT_INIT or DT_FINI points outside the code";
    // The linker puts _init and _fini at the start of .init and .fini.
    auto starts_section = [&](uint64_t a) {
      return code_sections_.empty() ||
             std::find(code_sections_.begin(), code_sections_.end(), a) != code_sections_.end();
    };
    if ((init && !starts_section(init)) || (fini && !starts_section(fini)))
      return "DT_INIT or DT_FINI is not the start of a code section";
    if (std::string p = symbols(symtab, strsz); !p.empty()) return p;
    if (std::string p = symbol_versions(versym); !p.empty()) return p;
    if (std::string p = gnu_hash(hash); !p.empty()) return p;
    if (relaent != sizeof(Elf64_Rela))
      return fmt::format("relocation entry size {} (expected {})", relaent, sizeof(Elf64_Rela));
    if (pltrel != DT_RELA) return "PLT relocations are not RELA";
    if (relacount > relasz / sizeof(Elf64_Rela))
      return fmt::format("DT_RELACOUNT {} is more than the {} relocations", relacount, relasz / sizeof(Elf64_Rela));
    if (std::string p = relocations(rela, relasz, "relocation", relacount); !p.empty()) return p;
    return relocations(jmprel, pltrelsz, "PLT relocation");
  }

  std::string relocations(uint64_t addr, uint64_t bytes, const char* what, uint64_t relative_count = 0) {
    if (bytes == 0) return "";
    if (bytes % sizeof(Elf64_Rela) != 0)
      return fmt::format("{} table size {} is not a whole number of entries", what, bytes);
    const std::optional<uint64_t> at = file_offset(addr, bytes);
    if (!at) return fmt::format("the {} table lies outside the file", what);
    std::vector<Elf64_Rela> relas(bytes / sizeof(Elf64_Rela));
    if (!file_.read_bytes(*at, relas.data(), bytes)) return fmt::format("cannot read the {} table", what);
    for (size_t i = 0; i < relas.size(); ++i) {
      const Elf64_Rela& r = relas[i];
      // Relocations write into writable segments only (no text relocations in a shared object
      // built with -fPIC; RELRO data is writable until relocation is done).
      if (!in_writable(r.r_offset, sizeof(uint64_t))) {
        return fmt::format("{} {} writes to address 0x{:x}, outside every writable loadable segment", what, i,
                           r.r_offset);
      }
      // Every relocation of a position-independent 64-bit object writes an aligned 8-byte word
      // (a pointer, a GOT or PLT slot): a misaligned target is damage.
      if (r.r_offset % sizeof(uint64_t) != 0)
        return fmt::format("{} {} writes to the misaligned address 0x{:x}", what, i, r.r_offset);
      // ld.so asserts (and ends the process) when one of the first DT_RELACOUNT entries is not
      // RELATIVE.
      if (i < relative_count && ELF64_R_TYPE(r.r_info) != kRelativeRelocation)
        return fmt::format("{} {} is not RELATIVE, but DT_RELACOUNT says the first {} are", what, i, relative_count);
      // The init and fini arrays hold code addresses that ld.so calls during dlopen and exit;
      // in a shared object they are written by RELATIVE relocations (base + addend).
      for (const auto& [array, array_bytes] : called_arrays_) {
        if (r.r_offset >= array && r.r_offset - array < array_bytes && ELF64_R_TYPE(r.r_info) == kRelativeRelocation &&
            !in_code(static_cast<uint64_t>(r.r_addend))) {
          return fmt::format("{} {} puts 0x{:x}, outside the code, in an init or fini array", what, i, r.r_addend);
        }
      }
      // Any other RELATIVE relocation stores base + addend, a pointer into this object (a
      // function table, a name): one that points elsewhere would be followed by the host.
      if (ELF64_R_TYPE(r.r_info) == kRelativeRelocation && !in_memory(static_cast<uint64_t>(r.r_addend), 0))
        return fmt::format("{} {} stores 0x{:x}, outside the object's memory", what, i, r.r_addend);
      const uint64_t sym = ELF64_R_SYM(r.r_info);
      if (dynsym_count_ && sym >= dynsym_count_) {
        return fmt::format("{} {} names symbol {} of a table of {}", what, i, sym, dynsym_count_);
      }
    }
    return "";
  }

  ElfFile file_;
  uint64_t size_ = 0;
  Elf64_Ehdr eh_{};
  std::vector<Elf64_Phdr> phdrs_;
  std::string strings_;                    // the dynamic string table
  std::vector<std::string> needed_names_;  // DT_NEEDED libraries
  std::vector<uint64_t> code_sections_;    // addresses of executable sections, from the section headers
  uint64_t max_version_ = 1;               // the largest version index the version tables define
  uint64_t dynsym_count_ = 0;              // from the section headers; 0 when unknown
  std::vector<std::pair<uint64_t, uint64_t>> called_arrays_;  // init/fini/preinit arrays: address, bytes
};

}  // namespace

std::string elf_problem(const std::filesystem::path& path) { return Checker(path).run(); }

}  // namespace attnrt
