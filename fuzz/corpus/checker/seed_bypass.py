# -*- coding: utf-7 -*-
x = ().__class__.__bases__
