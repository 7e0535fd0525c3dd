
checkoutcheckout"shop*Checkout2"
select
coord.shop"item:Open:vm.checkout