
³
photos/v1/photos.proto	photos.v1"v
Author
id (	Rid
name (	Rname
username (	Rusername
location (	Rlocation
bio (	Rbio"¡
Photo
id (	Rid
title (	Rtitle)
author (2.photos.v1.AuthorRauthor 
description (	Rdescription
	image_url (	RimageUrl
width (Rwidth
height (Rheight
tags (	Rtags
likes	 (Rlikes
liked
 (Rliked
location (	Rlocation"5
	PhotoList(
photos (2.photos.v1.PhotoRphotos"3
Account
name (	Rname
email (	Remailbproto3