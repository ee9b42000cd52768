# Generates build_info.hpp at every build (not only at configure time), so the suite's git SHA and
# dirty flag in a bundle are those of the binary that wrote it.
function(schedlab_provenance_target name)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" build_type_upper)
  set(flags "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${build_type_upper}}")
  if(SCHEDLAB_SANITIZE)
    string(APPEND flags " -fsanitize=address,undefined")
  endif()
  set(out_dir "${CMAKE_BINARY_DIR}/generated")
  add_custom_target(${name}_gen
    COMMAND ${CMAKE_COMMAND}
            -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DOUT=${out_dir}/schedlab/build_info.hpp
            "-DCOMPILER=${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}"
            "-DFLAGS=${flags}" -DBUILD_TYPE=${CMAKE_BUILD_TYPE} -DVERSION=${PROJECT_VERSION}
            -P ${CMAKE_SOURCE_DIR}/cmake/WriteBuildInfo.cmake
    BYPRODUCTS ${out_dir}/schedlab/build_info.hpp
    COMMENT "Recording build provenance")
  add_library(${name} INTERFACE)
  add_dependencies(${name} ${name}_gen)
  target_include_directories(${name} INTERFACE ${out_dir})
endfunction()
