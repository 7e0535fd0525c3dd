(
signinsignin-1
signupsignup-1(