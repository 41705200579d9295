const bit<8> a = 0xZZ;
const bit<8> b = 0w1;
const bit<8> ok = 8w255;
const string s = "never closed;
const bit<4> c = 4w3;
