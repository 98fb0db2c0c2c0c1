# embed_dashboard.cmake: writes src/metrics/dashboard.html into a C++ source
# file as one raw string (cmake -DIN=page.html -DOUT=file.cpp -P this).
file(READ "${IN}" page)
string(FIND "${page}" ")dashboard\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )dashboard\"")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from src/metrics/dashboard.html by cmake/embed_dashboard.cmake.\n"
  "namespace troupe::metrics {\n"
  "extern const char* const dashboard_html;\n"
  "const char* const dashboard_html = R\"dashboard(${page})dashboard\";\n"
  "}  // namespace troupe::metrics\n")
file(RENAME "${OUT}.tmp" "${OUT}")
