
navigate1-
itemitem-3
itemitem:3"shop:vm.item 