flowbus.v1.Navigation,(
signinsignin-1
signupsignup-1(*abc0:	coord-app@H€¼©†ªÊœÃ]7Y,m