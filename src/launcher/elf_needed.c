/*
 * elf_needed.c — DT_NEEDED scan of an ELF executable and PATH lookup (see
 * elf_needed.h).  Reads the program headers, finds PT_DYNAMIC, maps the
 * dynamic string table's address to a file offset through the PT_LOAD
 * segments, and compares each needed name.  ELF32 and ELF64 of the host's
 * byte order; anything else is "not ELF" and the caller falls back to the
 * environment.
 */
#include "elf_needed.h"
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CP_MAX_PH 256
#define CP_MAX_DYN 4096

static int cp_pread_all(int fd, void *buf, size_t n, uint64_t off) {
  return pread(fd, buf, n, (off_t)off) == (ssize_t)n ? 0 : -1;
}

/* Program headers and dynamic entries normalised to 64-bit. */
typedef struct { uint32_t type; uint64_t off, vaddr, filesz; } cp_ph;

static int cp_read_phdrs(int fd, const unsigned char *ident, cp_ph *ph, int *nph) {
  if (ident[EI_CLASS] == ELFCLASS64) {
    Elf64_Ehdr eh;
    if (cp_pread_all(fd, &eh, sizeof eh, 0) || eh.e_phentsize != sizeof(Elf64_Phdr)) return -1;
    *nph = eh.e_phnum > CP_MAX_PH ? CP_MAX_PH : eh.e_phnum;
    for (int i = 0; i < *nph; i++) {
      Elf64_Phdr p;
      if (cp_pread_all(fd, &p, sizeof p, eh.e_phoff + (uint64_t)i * sizeof p)) return -1;
      ph[i] = (cp_ph){p.p_type, p.p_offset, p.p_vaddr, p.p_filesz};
    }
    return 0;
  }
  Elf32_Ehdr eh;
  if (cp_pread_all(fd, &eh, sizeof eh, 0) || eh.e_phentsize != sizeof(Elf32_Phdr)) return -1;
  *nph = eh.e_phnum > CP_MAX_PH ? CP_MAX_PH : eh.e_phnum;
  for (int i = 0; i < *nph; i++) {
    Elf32_Phdr p;
    if (cp_pread_all(fd, &p, sizeof p, eh.e_phoff + (uint64_t)i * sizeof p)) return -1;
    ph[i] = (cp_ph){p.p_type, p.p_offset, p.p_vaddr, p.p_filesz};
  }
  return 0;
}

static int cp_vaddr_to_off(const cp_ph *ph, int nph, uint64_t va, uint64_t *off) {
  for (int i = 0; i < nph; i++)
    if (ph[i].type == PT_LOAD && va >= ph[i].vaddr && va < ph[i].vaddr + ph[i].filesz) {
      *off = ph[i].off + (va - ph[i].vaddr);
      return 0;
    }
  return -1;
}

static int cp_scan(int fd) {
  unsigned char ident[EI_NIDENT];
  if (cp_pread_all(fd, ident, sizeof ident, 0) || memcmp(ident, ELFMAG, SELFMAG)) return -1;
  const unsigned char host_data = (union { uint16_t u; unsigned char c[2]; }){.u = 1}.c[0]
                                      ? ELFDATA2LSB : ELFDATA2MSB;
  if (ident[EI_DATA] != host_data) return -1;
  if (ident[EI_CLASS] != ELFCLASS64 && ident[EI_CLASS] != ELFCLASS32) return -1;
  cp_ph ph[CP_MAX_PH];
  int nph = 0;
  if (cp_read_phdrs(fd, ident, ph, &nph)) return -1;
  const int is64 = ident[EI_CLASS] == ELFCLASS64;
  const size_t dsz = is64 ? sizeof(Elf64_Dyn) : sizeof(Elf32_Dyn);
  for (int i = 0; i < nph; i++) {
    if (ph[i].type != PT_DYNAMIC) continue;
    size_t n = ph[i].filesz / dsz;
    if (n > CP_MAX_DYN) n = CP_MAX_DYN;
    uint64_t strtab = 0, strsz = 0, needed[64];
    int nneeded = 0;
    for (size_t k = 0; k < n; k++) {
      int64_t tag;
      uint64_t val;
      if (is64) {
        Elf64_Dyn d;
        if (cp_pread_all(fd, &d, sizeof d, ph[i].off + k * dsz)) return -1;
        tag = d.d_tag, val = d.d_un.d_val;
      } else {
        Elf32_Dyn d;
        if (cp_pread_all(fd, &d, sizeof d, ph[i].off + k * dsz)) return -1;
        tag = d.d_tag, val = d.d_un.d_val;
      }
      if (tag == DT_NULL) break;
      if (tag == DT_STRTAB) strtab = val;
      else if (tag == DT_STRSZ) strsz = val;
      else if (tag == DT_NEEDED && nneeded < 64) needed[nneeded++] = val;
    }
    uint64_t stroff;
    if (!nneeded || cp_vaddr_to_off(ph, nph, strtab, &stroff)) return 0;
    for (int k = 0; k < nneeded; k++) {
      char name[64] = {0};
      if (strsz && needed[k] >= strsz) continue;
      if (pread(fd, name, sizeof name - 1, (off_t)(stroff + needed[k])) <= 0) continue;
      if (strncmp(name, "libmpi", 6) == 0) return 1;
    }
    return 0;
  }
  return 0; /* static executable: no dynamic section */
}

int cp_elf_links_mpi(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int r = cp_scan(fd);
  close(fd);
  return r;
}

static int cp_is_exec_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

int cp_find_program(const char *name, char *buf, unsigned long len) {
  if (!name || !*name) return -1;
  if (strchr(name, '/')) {
    if ((unsigned long)snprintf(buf, len, "%s", name) >= len) return -1;
    return cp_is_exec_file(buf) ? 0 : -1;
  }
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path;;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    /* An empty PATH element means the current directory. */
    int w = n ? snprintf(buf, len, "%.*s/%s", (int)n, p, name) : snprintf(buf, len, "./%s", name);
    if (w > 0 && (unsigned long)w < len && cp_is_exec_file(buf))
      return 0;
    if (!e) break;
    p = e + 1;
  }
  return -1;
}
