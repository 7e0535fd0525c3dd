F
cartcart"shop:vm.cart'
checkoutcheckout"shop:vm.checkout""
confirmationconfirmation"shop(2
back	coord.app:Back2
ok	coord.app:OK