

count1#
mail.0.bodyYour code is 424242.
mail.0.subject	Your code
	mail.0.toana@example.com
token424242