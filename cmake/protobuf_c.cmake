# protobuf-c: TensorBoard event files ([log] tensorboard_dir, io/tb_events.c) are Event
# protos. protoc-c generates the C of io/tb_event.proto at build time into
# ${CMAKE_BINARY_DIR}/gen/io/, and the library rlpt_tbproto holds it, linked to
# libprotobuf-c; io/tb_events.c includes "io/tb_event.pb-c.h". Both the compiler and
# the library are required: without them the build stops here, naming the packages.
find_program(PROTOC_C_EXECUTABLE protoc-c)
if(NOT PROTOC_C_EXECUTABLE)
  message(FATAL_ERROR "protoc-c not found: rlpt encodes TensorBoard event files with "
    "protobuf-c. On Debian: apt-get install protobuf-c-compiler libprotobuf-c-dev")
endif()
pkg_check_modules(PROTOBUFC IMPORTED_TARGET libprotobuf-c)
if(NOT PROTOBUFC_FOUND)
  message(FATAL_ERROR "libprotobuf-c not found (pkg-config libprotobuf-c): rlpt encodes "
    "TensorBoard event files with protobuf-c. On Debian: apt-get install libprotobuf-c-dev")
endif()

set(RLPT_PROTO_GEN ${CMAKE_BINARY_DIR}/gen)
set(RLPT_TB_PROTO_C ${RLPT_PROTO_GEN}/io/tb_event.pb-c.c)
set(RLPT_TB_PROTO_H ${RLPT_PROTO_GEN}/io/tb_event.pb-c.h)
add_custom_command(
  OUTPUT ${RLPT_TB_PROTO_C} ${RLPT_TB_PROTO_H}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${RLPT_PROTO_GEN}
  COMMAND ${PROTOC_C_EXECUTABLE} --c_out=${RLPT_PROTO_GEN} -I${CMAKE_SOURCE_DIR} io/tb_event.proto
  DEPENDS ${CMAKE_SOURCE_DIR}/io/tb_event.proto
  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "protoc-c io/tb_event.proto"
  VERBATIM)
add_library(rlpt_tbproto STATIC ${RLPT_TB_PROTO_C})
target_include_directories(rlpt_tbproto PUBLIC ${RLPT_PROTO_GEN})
target_link_libraries(rlpt_tbproto PUBLIC PkgConfig::PROTOBUFC)
