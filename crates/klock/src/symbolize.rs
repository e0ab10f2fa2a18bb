//! Symbolization of code and data addresses in the running process, for
//! reports (the interposer's statistics, lockdep): `dladdr` for the object, then
//! the object's ELF symbol table (`.symtab`, else `.dynsym`) for the enclosing
//! function (a return address) or data object (a lock), so `static` functions and
//! variables get names too. No allocation; the object files are `mmap`ed while a
//! lookup runs. Text goes into a fixed buffer ([`Buf`]).
//!
//! A leaf: it uses nothing else in klock.

use core::fmt::{self, Write as _};

/// A `fmt::Write` into a fixed byte buffer; overflow truncates and is remembered.
pub struct Buf<'a> {
    buf: &'a mut [u8],
    len: usize,
    /// Whether something did not fit.
    pub truncated: bool,
}

impl<'a> Buf<'a> {
    /// An empty writer over `buf`.
    pub fn new(buf: &'a mut [u8]) -> Buf<'a> {
        Buf {
            buf,
            len: 0,
            truncated: false,
        }
    }
    /// The bytes written.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    /// Replaces the end of a truncated text by `note` (which must fit in 32
    /// bytes), so a cut report says so.
    pub fn end_cut(&mut self, note: &[u8]) {
        let keep = self.buf.len().saturating_sub(32);
        self.len = self.len.min(keep);
        self.truncated = false;
        self.push_bytes(note);
    }
    /// Appends raw bytes (a C string's contents, say).
    pub fn push_bytes(&mut self, b: &[u8]) {
        let n = b.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&b[..n]);
        self.len += n;
        if n < b.len() {
            self.truncated = true;
        }
    }
}

impl fmt::Write for Buf<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_bytes(s.as_bytes());
        Ok(())
    }
}

/// Names addresses of the running process.
pub struct Symbolizer<'a> {
    /// Base address of the object whose frames are the reporter's own (dropped
    /// from stacks; 0: none).
    pub own_base: usize,
    /// Base address of the main program (symbolized from /proc/self/exe).
    pub main_base: usize,
    /// The main program's path (`readlink /proc/self/exe`; empty if unknown), shown
    /// instead of the loader's name for it (`argv[0]`).
    pub exe: &'a [u8],
}

impl<'a> Symbolizer<'a> {
    /// A symbolizer for this process: the main program found through
    /// `AT_PHDR`, its path read into `exe_buf`; `own` is any address inside the
    /// reporter's own object (0: keep every frame).
    pub fn live(own: usize, exe_buf: &'a mut [u8]) -> Symbolizer<'a> {
        Symbolizer {
            own_base: if own == 0 {
                0
            } else {
                dl_info(own).map_or(0, |i| i.dli_fbase as usize)
            },
            main_base: main_base(),
            exe: self_exe(exe_buf),
        }
    }

    /// Is `addr` inside the reporter's own object?
    pub fn is_own(&self, addr: usize) -> bool {
        self.own_base != 0 && dl_info(addr).is_some_and(|i| i.dli_fbase as usize == self.own_base)
    }

    /// Writes the name of the static variable containing `addr` (`name` or
    /// `name+0xoff`); false (nothing written) for the heap, stacks and anonymous
    /// maps.
    pub fn lock_name(&self, addr: usize, out: &mut Buf<'_>) -> bool {
        // Only the symbol table, which knows each variable's size: dladdr's nearest
        // exported symbol may be an unrelated neighbour.
        self.object_of(addr)
            .is_some_and(|o| elf_symbolize(o.path, o.base, addr, Want::Data, out))
    }

    /// Writes `function+0xoff  (object)` for the return address `addr`, or
    /// `??  (object+0xoff)` when no symbol covers it.
    pub fn frame(&self, addr: usize, out: &mut Buf<'_>) {
        let Some(Object {
            info,
            base,
            fname,
            path,
        }) = self.object_of(addr)
        else {
            out.push_bytes(b"??");
            return;
        };
        let mut found = false;
        if !path.is_empty() {
            found = elf_symbolize(path, base, addr, Want::Code, out);
        }
        if !found && !info.dli_sname.is_null() {
            // SAFETY: dladdr's symbol name is the loader's, live for the process.
            out.push_bytes(unsafe { cstr_bytes(info.dli_sname) });
            let _ = write!(out, "+{:#x}", addr - info.dli_saddr as usize);
            found = true;
        }
        if !found {
            out.push_bytes(b"??");
        }
        out.push_bytes(b"  (");
        if fname.is_empty() {
            out.push_bytes(b"?");
        } else {
            out.push_bytes(fname);
        }
        if !found {
            // No symbol (a stripped object's local function): the offset in the
            // object, for `addr2line -e OBJECT OFFSET` with its debug symbols.
            let _ = write!(out, "+{:#x}", addr.wrapping_sub(base));
        }
        out.push_bytes(b")");
    }
}

/// The load address of the main program (0 if unknown).
pub fn main_base() -> usize {
    // SAFETY: getauxval has no preconditions.
    let phdr = unsafe { libc::getauxval(libc::AT_PHDR) } as usize;
    dl_info(phdr).map_or(0, |i| i.dli_fbase as usize)
}

/// `readlink("/proc/self/exe")` into `buf`; the bytes written (empty on failure).
pub fn self_exe(buf: &mut [u8]) -> &[u8] {
    // SAFETY: a NUL-terminated path and a writable buffer of buf.len() bytes.
    let n = unsafe {
        libc::readlink(
            c"/proc/self/exe".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n > 0 && (n as usize) < buf.len() {
        &buf[..n as usize]
    } else {
        &[]
    }
}

/// `dladdr(addr)`: the loaded object containing `addr`, if any.
pub fn dl_info(addr: usize) -> Option<libc::Dl_info> {
    // SAFETY: Dl_info is plain old data; all-zero is a valid value.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only reads the address (it need not be mapped) and fills `info`.
    let ok = unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) };
    (ok != 0).then_some(info)
}

/// What a symbol lookup looks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// The function containing a return address (the call is the byte before it).
    Code,
    /// The variable containing a data address (a lock inside a static object).
    Data,
}

impl Want {
    /// The ELF symbol types that match: STT_FUNC = 2 and STT_GNU_IFUNC = 10, or
    /// STT_OBJECT = 1.
    fn matches(self, st_info: u8) -> bool {
        let ty = st_info & 0xf;
        match self {
            Want::Code => ty == 2 || ty == 10,
            Want::Data => ty == 1,
        }
    }
    /// The address looked up for `addr`.
    fn probe(self, addr: usize) -> usize {
        match self {
            Want::Code => addr.saturating_sub(1),
            Want::Data => addr,
        }
    }
}

/// The loaded object containing an address.
struct Object<'a> {
    info: libc::Dl_info,
    /// Its load address.
    base: usize,
    /// Its name as shown: the main program's real path, else the loader's name.
    fname: &'a [u8],
    /// The file to read its symbols from (`/proc/self/exe` for the main program).
    path: &'a [u8],
}

impl<'s> Symbolizer<'s> {
    /// The object containing `addr` (none for the heap, stacks, anonymous maps).
    fn object_of(&self, addr: usize) -> Option<Object<'s>> {
        let info = dl_info(addr)?;
        let base = info.dli_fbase as usize;
        let main = base == self.main_base;
        let fname = if main && !self.exe.is_empty() {
            self.exe
        } else {
            // SAFETY: dladdr's object name is the loader's, live for the process.
            unsafe { cstr_bytes(info.dli_fname) }
        };
        let path: &[u8] = if main { b"/proc/self/exe\0" } else { fname };
        Some(Object {
            info,
            base,
            fname,
            path,
        })
    }
}

/// The bytes of a C string (empty for null), without the NUL.
///
/// # Safety
///
/// `p` is null or a NUL-terminated string that lives for `'a` (libc's and the
/// loader's strings live for the process's lifetime).
pub unsafe fn cstr_bytes<'a>(p: *const libc::c_char) -> &'a [u8] {
    if p.is_null() {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes()
}

/// Reads a `T` at `off` in `data`, if it fits.
fn read_at<T: Copy>(data: &[u8], off: usize) -> Option<T> {
    let end = off.checked_add(size_of::<T>())?;
    if end > data.len() {
        return None;
    }
    // SAFETY: `off..end` is inside `data`; read_unaligned has no alignment needs and
    // T is plain old data (ELF structures).
    Some(unsafe { core::ptr::read_unaligned(data.as_ptr().add(off).cast::<T>()) })
}

/// Writes `name+0xoff` for the function (`Want::Code`, `addr` a return address)
/// or variable (`Want::Data`; just `name` at offset 0) containing `addr` in the ELF
/// file at `path` (NUL-terminated or not) mapped at `base`. False if not found.
fn elf_symbolize(path: &[u8], base: usize, addr: usize, want: Want, out: &mut Buf<'_>) -> bool {
    let mut cpath = [0u8; 4096];
    let n = path.iter().position(|&b| b == 0).unwrap_or(path.len());
    if n >= cpath.len() {
        return false;
    }
    cpath[..n].copy_from_slice(&path[..n]);
    // SAFETY: a NUL-terminated path; open has no other preconditions.
    let fd = unsafe { libc::open(cpath.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    // SAFETY: `st` is plain old data filled by fstat on our own fd.
    let mut st: libc::stat = unsafe { core::mem::zeroed() };
    // SAFETY: fd is open; `st` is writable.
    let size = if unsafe { libc::fstat(fd, &mut st) } == 0 {
        st.st_size as usize
    } else {
        0
    };
    let map = if size > 0 {
        // SAFETY: a private read-only mapping of our own fd; unmapped below.
        unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                size,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                fd,
                0,
            )
        }
    } else {
        libc::MAP_FAILED
    };
    // SAFETY: our own fd, no longer needed (the mapping stays valid).
    unsafe { libc::close(fd) };
    if map == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: the mapping is `size` readable bytes until the munmap below. A file
    // truncated under us could fault; symbol files of a running process are not.
    let data = unsafe { core::slice::from_raw_parts(map as *const u8, size) };
    let found = elf_lookup(data, base, want.probe(addr), want);
    if let Some((name_off, value, bias)) = found {
        let name = &data[name_off..];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        out.push_bytes(&name[..end]);
        let off = addr.wrapping_sub(value.wrapping_add(bias));
        if off != 0 || want == Want::Code {
            let _ = write!(out, "+{off:#x}");
        }
    }
    // SAFETY: the mapping made above; `data` is not used after this.
    unsafe { libc::munmap(map, size) };
    found.is_some()
}

/// Finds the symbol of kind `want` containing `pc` in the ELF image `data` loaded
/// at `base`: (file offset of its name, st_value, load bias).
fn elf_lookup(data: &[u8], base: usize, pc: usize, want: Want) -> Option<(usize, usize, usize)> {
    let eh: libc::Elf64_Ehdr = read_at(data, 0)?;
    if eh.e_ident[..4] != *b"\x7fELF" || eh.e_ident[4] != 2 {
        return None;
    }
    // Load bias: ET_EXEC is linked at its addresses; ET_DYN at base - lowest vaddr.
    let mut bias = 0usize;
    if eh.e_type == libc::ET_DYN {
        let mut lo = usize::MAX;
        for k in 0..eh.e_phnum as usize {
            let ph: libc::Elf64_Phdr =
                read_at(data, eh.e_phoff as usize + k * eh.e_phentsize as usize)?;
            if ph.p_type == libc::PT_LOAD {
                lo = lo.min(ph.p_vaddr as usize & !0xfff);
            }
        }
        bias = base.wrapping_sub(if lo == usize::MAX { 0 } else { lo });
    }
    let rel = pc.wrapping_sub(bias);
    let shdr = |k: usize| -> Option<libc::Elf64_Shdr> {
        read_at(data, eh.e_shoff as usize + k * eh.e_shentsize as usize)
    };
    let mut best: Option<(usize, usize)> = None; // (name offset, value)
    // SHT_SYMTAB = 2 (full, with static functions), else SHT_DYNSYM = 11.
    for table in [2u32, 11] {
        for k in 0..eh.e_shnum as usize {
            let sh = shdr(k)?;
            if sh.sh_type != table {
                continue;
            }
            let strtab = shdr(sh.sh_link as usize)?;
            let count = sh.sh_size as usize / size_of::<libc::Elf64_Sym>().max(1);
            for j in 0..count {
                let sym: libc::Elf64_Sym = read_at(
                    data,
                    sh.sh_offset as usize + j * size_of::<libc::Elf64_Sym>(),
                )?;
                if !want.matches(sym.st_info) || sym.st_shndx == 0 {
                    continue;
                }
                let v = sym.st_value as usize;
                let size = (sym.st_size as usize).max(1);
                if rel >= v && rel < v + size && best.is_none_or(|(_, bv)| v > bv) {
                    let off = strtab.sh_offset as usize + sym.st_name as usize;
                    if off < data.len() {
                        best = Some((off, v));
                    }
                }
            }
        }
        if best.is_some() {
            break;
        }
    }
    best.map(|(off, v)| (off, v, bias))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolizes_a_static_function_of_this_binary() {
        #[inline(never)]
        fn probe_target() -> usize {
            std::hint::black_box(probe_target as *const () as usize)
        }
        let addr = probe_target() + 1; // "return address" just inside the function
        let src = Symbolizer {
            own_base: 1, // nothing is dropped
            exe: b"/the/exe",
            main_base: main_base(),
        };
        let mut b = [0u8; 1024];
        let mut w = Buf::new(&mut b);
        src.frame(addr, &mut w);
        let s = String::from_utf8_lossy(w.bytes()).into_owned();
        assert!(s.contains("probe_target"), "{s}");
        assert!(s.ends_with("(/the/exe)"), "the main program's path: {s}");
        let mut b = [0u8; 4096];
        assert!(self_exe(&mut b).starts_with(b"/"));
    }

    /// A static variable of this binary gets its (mangled) name, `+0xoff` inside
    /// it; a heap or stack address gets none.
    #[test]
    fn names_a_static_variable_and_not_the_heap() {
        static NAMED_LOCK_PROBE: [core::sync::atomic::AtomicU64; 4] =
            [const { core::sync::atomic::AtomicU64::new(0) }; 4];
        let src = Symbolizer {
            own_base: 0,
            exe: b"",
            main_base: main_base(),
        };
        let name = |src: &Symbolizer<'_>, addr: usize| {
            let mut b = [0u8; 1024];
            let mut w = Buf::new(&mut b);
            let found = src.lock_name(addr, &mut w);
            (found, String::from_utf8_lossy(w.bytes()).into_owned())
        };
        let at = std::hint::black_box(&NAMED_LOCK_PROBE) as *const _ as usize;
        let (found, s) = name(&src, at);
        assert!(
            found && s.contains("NAMED_LOCK_PROBE") && !s.contains('+'),
            "{s}"
        );
        let (found, s) = name(&src, at + 8);
        assert!(
            found && s.contains("NAMED_LOCK_PROBE") && s.ends_with("+0x8"),
            "{s}"
        );
        let heap = Box::new(0u64);
        let (found, s) = name(&src, &*heap as *const u64 as usize);
        assert!(!found && s.is_empty(), "{s}");
        let stack = 0u64;
        let (found, s) = name(&src, std::hint::black_box(&stack) as *const u64 as usize);
        assert!(!found && s.is_empty(), "{s}");
    }
}
