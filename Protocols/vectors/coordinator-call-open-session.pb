
openSession
sessionabc