# pack_util.sh -- sourced by the bench scripts that pack executables built
# here for a lent GPU machine (Ubuntu 24.04, no package manager):
#   pack_exe EXE DEST LIBDIR   EXE stripped to DEST, and the shared libraries
#                              it loads that such a machine may lack (every one
#                              ldd names, less glibc's own and the C++ runtime,
#                              newer there: libgomp, Debian's libnetcdf, libhdf5
#                              and theirs) copied into LIBDIR
pack_exe() {
  strip -o "$2" "$1" || return 1
  ldd "$1" | awk '/=> \// { print $3 }' |
    grep -vE '/lib(c|m|pthread|dl|rt|resolv|anl|util|nsl|nss_[a-z]*|mvec|gcc_s|stdc\+\+)\.so' |
    while read -r lib; do cp -Ln "$lib" "$3/" 2>/dev/null; done
  return 0
}
