savedcmd_/work/main/kernel/build/6.12.117+deb12-amd64/veloces.o := x86_64-linux-gnu-ld -m elf_x86_64 -z noexecstack --no-warn-rwx-segments   -r -o /work/main/kernel/build/6.12.117+deb12-amd64/veloces.o @/work/main/kernel/build/6.12.117+deb12-amd64/veloces.mod  ; ./tools/objtool/objtool --hacks=jump_label --hacks=noinstr --hacks=skylake --ibt --orc --retpoline --rethunk --sls --static-call --uaccess --prefix=16  --link  --module /work/main/kernel/build/6.12.117+deb12-amd64/veloces.o

/work/main/kernel/build/6.12.117+deb12-amd64/veloces.o: $(wildcard ./tools/objtool/objtool)
