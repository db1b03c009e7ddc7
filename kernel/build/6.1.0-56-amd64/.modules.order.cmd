cmd_/work/main/kernel/build/6.1.0-56-amd64/modules.order := {   echo /work/main/kernel/build/6.1.0-56-amd64/veloces.ko; :; } > /work/main/kernel/build/6.1.0-56-amd64/modules.order
