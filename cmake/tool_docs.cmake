# A tool's man page (help2man, from its --help and --version) and its bash
# completion (the tool's own `--bash-completion`, tools/cli/completion.hpp): one
# source, the tool's CLI11 option list, for both. Run by tools/CMakeLists.txt:
#   cmake -DTOOL=<exe> -DNAME=<ndm-send> -DHELP2MAN=<path or empty> -DMAN=<out.1> -DCOMPLETION=<out> -P tool_docs.cmake
set(ENV{ASAN_OPTIONS} "detect_leaks=0")  # a sanitizer build's tools print and exit
execute_process(COMMAND ${TOOL} --bash-completion OUTPUT_FILE ${COMPLETION} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NAME} --bash-completion: exit ${rc}")
endif()
if(HELP2MAN)
  # NAME's one-line description: the first line of --help, "ndm-send: what it does".
  execute_process(COMMAND ${TOOL} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NAME} --help: exit ${rc}")
  endif()
  string(REGEX REPLACE "\n.*" "" what "${help}")
  string(REGEX REPLACE "^${NAME}: *" "" what "${what}")
  execute_process(COMMAND ${HELP2MAN} --no-info --section=1 --name=${what} --source=ndm --output=${MAN} ${TOOL}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "help2man ${NAME}: exit ${rc}")
  endif()
endif()
