/work/main/kernel/build/6.1.0-56-amd64/veloces-iosched.o
