# Warnings on for our targets. Applied per target so third-party headers stay quiet
# (they come in as SYSTEM includes from their imported targets).
function(crosslab_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                         -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual
                         -Wnull-dereference -Wformat=2)
endfunction()
