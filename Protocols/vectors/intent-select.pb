
checkoutselect
itemitem:3 *checkout