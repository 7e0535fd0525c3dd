Coupon applied."shop.v1.Cart(2checkout:couponAppliedBä
Checkout

Two items in your cart.
couponCoupon 
cardCard 97
deliveryDelivery*
stdStandard*
expExpress&$

applyCoupon

payPay R$ 30,00Y"W
itemsItems" 
item:3Notebookx2"R$ 20,00"
item:9Pen"R$ 10,00*select2item*
TotalR$ 30,002
Coupon applied.'
select
itemitem:3Open the itemJ0
applyCouponvm.checkout"coupon:Apply couponJD
payvm.checkout"card"delivery(2choose a delivery first:Pay@