# Warnings on for our targets. Applied per target so third-party headers stay quiet
# (they come in as SYSTEM includes from their imported targets).
function(crosslab_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                         -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual
                         -Wformat=2)
  # (-Wnull-dereference is left out: GCC 12 reports false positives inside libstdc++ vector code.)
endfunction()
