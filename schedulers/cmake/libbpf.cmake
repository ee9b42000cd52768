# libbpf 1.5 from Debian's linux-source-6.12, built into the build directory (schedulers/README.md
# says why: Debian's libbpf-dev 1.1 cannot attach struct_ops through a link). Defines:
#   schedlab::libbpf       static libbpf.a with its headers (<bpf/libbpf.h>, <bpf/bpf_helpers.h>, ...)
#   SCHEDLAB_LIBBPF_INCLUDE_DIR   the installed headers, for the BPF programs' clang command lines
# Each step is a custom command with real OUTPUTs: the tarball is unpacked and libbpf built once.
set(SCHEDLAB_LINUX_SOURCE_TARBALL "/usr/src/linux-source-6.12.tar.xz" CACHE FILEPATH
    "Debian's linux-source-6.12 tarball: libbpf and bpftool come from its tools/")
if(NOT EXISTS "${SCHEDLAB_LINUX_SOURCE_TARBALL}")
  message(FATAL_ERROR "schedulers/: ${SCHEDLAB_LINUX_SOURCE_TARBALL} is missing; it carries the libbpf 1.5 "
                      "the sched_ext loader needs: apt-get install linux-source-6.12 (ci/setup installs it)")
endif()
find_program(SCHEDLAB_MAKE NAMES make REQUIRED)

set(_libbpf_root "${CMAKE_CURRENT_BINARY_DIR}/libbpf")
set(_libbpf_tree "${_libbpf_root}/linux-source-6.12")  # the tarball's top directory
set(_libbpf_unpacked "${_libbpf_root}/unpacked.stamp")
set(_libbpf_obj "${_libbpf_root}/obj")
set(_libbpf_archive "${_libbpf_obj}/libbpf.a")
set(SCHEDLAB_LIBBPF_INCLUDE_DIR "${_libbpf_root}/include")

# What libbpf's Makefile reads, and nothing else (about 4 MB of the 150 MB tarball): its sources, the
# tools' copies of the uapi headers, the tools' build system, and scripts/bpf_doc.py, which generates
# bpf_helper_defs.h from tools/include/uapi/linux/bpf.h. Unpacking takes most of the ~20 s (xz).
add_custom_command(
  OUTPUT "${_libbpf_unpacked}"
  COMMAND ${CMAKE_COMMAND} -E rm -rf "${_libbpf_tree}"
  COMMAND tar -xJf "${SCHEDLAB_LINUX_SOURCE_TARBALL}" -C "${_libbpf_root}" --wildcards
          "linux-source-6.12/tools/lib/bpf/*" "linux-source-6.12/tools/include/*"
          "linux-source-6.12/tools/scripts/*" "linux-source-6.12/tools/build/*"
          "linux-source-6.12/tools/arch/x86/include/*" "linux-source-6.12/scripts/bpf_doc.py"
  COMMAND ${CMAKE_COMMAND} -E touch "${_libbpf_unpacked}"
  DEPENDS "${SCHEDLAB_LINUX_SOURCE_TARBALL}"
  COMMENT "Unpacking libbpf from ${SCHEDLAB_LINUX_SOURCE_TARBALL}"
  VERBATIM)
file(MAKE_DIRECTORY "${_libbpf_root}" "${_libbpf_obj}" "${SCHEDLAB_LIBBPF_INCLUDE_DIR}")

# Only the static archive and the headers (the Makefile's `all` would also link libbpf.so). Built
# with the host's cc and libbpf's own flags, as the kernel's tools/sched_ext Makefile does; -fPIC so
# that a position-independent executable can link it. Our warnings flags do not apply to libbpf.
add_custom_command(
  OUTPUT "${_libbpf_archive}" "${SCHEDLAB_LIBBPF_INCLUDE_DIR}/bpf/libbpf.h"
         "${SCHEDLAB_LIBBPF_INCLUDE_DIR}/bpf/bpf_helper_defs.h"
  COMMAND ${SCHEDLAB_MAKE} -s -C "${_libbpf_tree}/tools/lib/bpf" -j2 "OUTPUT=${_libbpf_obj}/"
          "EXTRA_CFLAGS=-O2 -fPIC" "DESTDIR=${_libbpf_root}" prefix= "${_libbpf_archive}" install_headers
  DEPENDS "${_libbpf_unpacked}"
  COMMENT "Building libbpf 1.5 (static) from linux-source-6.12"
  VERBATIM)
add_custom_target(schedlab_libbpf_build DEPENDS "${_libbpf_archive}")

find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
add_library(schedlab_libbpf STATIC IMPORTED GLOBAL)
add_library(schedlab::libbpf ALIAS schedlab_libbpf)
set_target_properties(schedlab_libbpf PROPERTIES
  IMPORTED_LOCATION "${_libbpf_archive}"
  INTERFACE_INCLUDE_DIRECTORIES "${SCHEDLAB_LIBBPF_INCLUDE_DIR}"
  INTERFACE_LINK_LIBRARIES "PkgConfig::LIBELF;ZLIB::ZLIB")
add_dependencies(schedlab_libbpf schedlab_libbpf_build)
