>
home
homehome-1&
details	details-1
itemmovie:42
likes
likeslikes-1"
settings
settings
settings-1"
expenses
expenses
expenses-1expenses"0
confirmation	confirm-1
titleAdd expense?(