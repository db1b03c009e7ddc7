/work/main/kernel/build/6.12.117+deb12-amd64/veloces-iosched.o
