
hello