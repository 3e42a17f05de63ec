# Bottom-up merge sort over an array (no external sort).
read -r n
read -r -a a
tmp=()
for ((width = 1; width < n; width *= 2)); do
    for ((lo = 0; lo < n; lo += 2 * width)); do
        ((mid = lo + width < n ? lo + width : n))
        ((hi = lo + 2 * width < n ? lo + 2 * width : n))
        i=$lo
        j=$mid
        k=$lo
        while ((i < mid && j < hi)); do
            if ((a[i] <= a[j])); then
                tmp[k++]=${a[i++]}
            else
                tmp[k++]=${a[j++]}
            fi
        done
        while ((i < mid)); do tmp[k++]=${a[i++]}; done
        while ((j < hi)); do tmp[k++]=${a[j++]}; done
    done
    a=("${tmp[@]:0:n}")
done
echo "${a[*]:0:n}"
