
attachedtrue
sessionabc 